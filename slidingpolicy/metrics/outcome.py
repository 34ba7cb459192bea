"""Each request judged against its SLO at the end of a run."""

from __future__ import annotations

import math

import attrs
import numpy as np
from numpy.typing import NDArray

from slidingpolicy.metrics.percentiles import FloatArray, IntArray
from slidingpolicy.metrics.token_log import TokenLog


@attrs.frozen(slots=True)
class RequestOutcome:
    """Per-request columns at the end of a run (NaN where a token never came)."""

    generated: IntArray
    ttft: FloatArray
    max_gap: FloatArray
    max_lateness: FloatArray
    finish: FloatArray
    preemptions: IntArray
    completed: NDArray[np.bool_]
    attained: NDArray[np.bool_]
    ttft_attained: NDArray[np.bool_]
    tbt_attained: NDArray[np.bool_]
    given_up: FloatArray
    """Seconds from arrival to the give-up notice (NaN where the request was not given up)."""

    def of(self, index: IntArray) -> RequestOutcome:
        """The outcome of the requests at `index` only."""
        return RequestOutcome(*(column[index] for column in attrs.astuple(self, recurse=False)))


def outcome(log: TokenLog) -> RequestOutcome:
    """Judge every request against its SLO (`slidingpolicy.metrics`)."""
    c = log.columns
    completed = log.generated == c.output
    ttft = log.first_token - c.arrival
    with np.errstate(invalid="ignore"):
        ttft_ok = ttft <= c.ttft
    return RequestOutcome(
        generated=log.generated.copy(),
        ttft=ttft,
        max_gap=np.where(log.generated > 0, log.max_gap, math.nan),
        max_lateness=np.where(log.generated > 0, log.max_lateness, math.nan),
        finish=np.where(completed, log.last_token, math.nan),
        preemptions=log.preemptions.copy(),
        completed=completed,
        attained=completed & (log.max_lateness <= 0.0),
        ttft_attained=ttft_ok,
        tbt_attained=completed & (log.max_gap <= c.tbt),
        given_up=np.array(log.notice, dtype=np.float64) - c.arrival,
    )
