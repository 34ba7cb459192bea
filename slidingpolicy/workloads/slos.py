"""Latency SLOs: per data set defaults, or QoServe's three tiers; all scaled by `slo_scale`.

Per data set (the project's defaults): sharegpt TTFT 3 s / TBT 100 ms, arxiv TTFT
10 s / TBT 200 ms. The CPU engine's data sets (`workloads.uniform`): chat TTFT 1 s, documents
TTFT 3 s, both TBT 50 ms, tight enough that a CPU engine's longest steps (a prefill chunk of a
few hundred tokens beside the decodes) decide who meets them.

QoServe tiers, from its reference implementation, the ``niyama_asplos2026`` branch of
microsoft/sarathi-serve (commit 72339db): ``TIER_DEADLINES = [6.0, 600.0, 1800.0]`` in
sarathi/core/datatypes/sequence.py, each request drawing its tier uniformly; the paper
(QoServe, ASPLOS 2026; arXiv 2503.22562 "Niyama") states the same three classes.

- Tier 0, interactive: TTFT 6 s; TBT 50 ms, the ``execution_threshold`` its capacity
  experiments use (fig7.sh, 0.05 s for the Azure traces).
- Tiers 1 and 2, batch: a deadline on the last token (TTLT) of 600 s and 1800 s, with the
  relaxed ``execution_threshold_batched`` of 400 ms between tokens; the scheduler turns the
  TTLT into a first-token deadline TTLT − output · TBT (deadline_scheduler.py).

Our per-token deadlines (eq. 1) need TTFT > 0, which TTLT − output · TBT is not for long outputs
(output > 1485 at 600 s). Where it would fall below the interactive TTFT (6 s), we shrink the
TBT to (TTLT − 6 s) / output so that the first token keeps 6 s; the last token's deadline
stays within the TTLT either way.
"""

from __future__ import annotations

import math

import attrs
import numpy as np
from numpy.typing import NDArray

from slidingpolicy._validate import MAX_SECONDS
from slidingpolicy.errors import InvalidRecordError, UnknownNameError

FloatArray = NDArray[np.float64]


@attrs.frozen(slots=True)
class Slo:
    """A time-to-first-token and a time-between-tokens limit, in seconds."""

    ttft: float
    tbt: float


DATASET_SLOS = {
    "sharegpt": Slo(3.0, 0.1),
    "arxiv": Slo(10.0, 0.2),
    "chat": Slo(1.0, 0.05),
    "documents": Slo(3.0, 0.05),
}

INTERACTIVE = Slo(6.0, 0.05)
BATCH_TBT = 0.4
BATCH_TTLT = (600.0, 1800.0)
TIERS = 3


LONGEST = max(*BATCH_TTLT, *(slo.ttft for slo in DATASET_SLOS.values()))
"""The longest SLO a workload draws before scaling (seconds)."""


def check_scale(slo_scale: float) -> None:
    """Reject a scale that is not a finite number > 0, or that would stretch an SLO beyond
    the longest time a record holds (`_validate.MAX_SECONDS`)."""
    if not (isinstance(slo_scale, int | float) and math.isfinite(slo_scale) and slo_scale > 0):
        raise InvalidRecordError("slo", "slo_scale", f"={slo_scale!r} must be finite and > 0")
    most = MAX_SECONDS / LONGEST
    if slo_scale > most:
        raise InvalidRecordError(
            "slo",
            "slo_scale",
            f"={slo_scale:g} stretches SLOs of up to {LONGEST:g} s beyond the {MAX_SECONDS:g} s "
            f"a record holds; at most {most:.4g}",
        )


def dataset_slo(source: str, slo_scale: float = 1.0) -> Slo:
    """The default SLO of a data set, scaled."""
    check_scale(slo_scale)
    try:
        slo = DATASET_SLOS[source]
    except KeyError:
        raise UnknownNameError("SLO data set", source, tuple(DATASET_SLOS)) from None
    return Slo(slo.ttft * slo_scale, slo.tbt * slo_scale)


def tiered_slos(
    outputs: NDArray[np.int64], rng: np.random.Generator, slo_scale: float = 1.0
) -> tuple[NDArray[np.int64], FloatArray, FloatArray]:
    """Tier (0, 1, 2, uniform), TTFT and TBT of each request, given its output length."""
    check_scale(slo_scale)
    tiers = rng.integers(0, TIERS, outputs.size)
    ttft, tbt = tier_slos(tiers, outputs, slo_scale)
    return tiers, ttft, tbt


def tier_slos(
    tiers: NDArray[np.int64], outputs: NDArray[np.int64], slo_scale: float = 1.0
) -> tuple[FloatArray, FloatArray]:
    """TTFT and TBT of requests of these tiers and output lengths (module docstring)."""
    ttlt = np.where(tiers == 1, BATCH_TTLT[0], BATCH_TTLT[1]) * slo_scale
    floor = INTERACTIVE.ttft * slo_scale
    batch_tbt = np.minimum(BATCH_TBT * slo_scale, (ttlt - floor) / outputs)
    batch_ttft = ttlt - outputs * batch_tbt
    interactive = tiers == 0
    ttft = np.where(interactive, INTERACTIVE.ttft * slo_scale, batch_ttft)
    tbt = np.where(interactive, INTERACTIVE.tbt * slo_scale, batch_tbt)
    return ttft, tbt
