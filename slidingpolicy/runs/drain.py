"""Trials too short to stand for the long run: those whose drain (`Metrics.drain`, the time
counted requests were still served on time after the last arrival) is a large share.

A steady-state trial has no drain (arrivals go on until every counted deadline has passed,
`workloads.steady_state`); a finite trial (`--whole`, a burst, a trace's own times) has one,
and at a fixed rate it lasts about as long whatever the trial's size, so a trial n' = n ·
D(1 − s) / (s · T) requests long has a drain of share s, where D is the drain and T the
rest of the span.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from slidingpolicy.metrics import Metrics

DRAIN_SHARE = 0.1
"""The largest share of a trial's span its drain may take before the trial is called too
short."""


def too_short(metrics: Metrics) -> bool:
    """Whether the run's drain is more than `DRAIN_SHARE` of its span."""
    return metrics.drain_share > DRAIN_SHARE


def enough_requests(metrics: Metrics) -> int:
    """The requests at which a finite trial's drain would be `DRAIN_SHARE` of its span (module
    docstring), rounded up to two significant digits."""
    rest = max(metrics.span - metrics.drain, 1e-9)
    wanted = metrics.requests * metrics.drain * (1.0 - DRAIN_SHARE) / (DRAIN_SHARE * rest)
    scale = 10.0 ** max(0, math.floor(math.log10(max(wanted, 1.0))) - 1)
    return int(math.ceil(wanted / scale) * scale)


def drain_note(label: str, metrics: Metrics) -> str | None:
    """One line on a trial too short to stand for the long run, with the -n that would do;
    None for one that is not."""
    if not too_short(metrics):
        return None
    return (
        f"{label}: {metrics.drain_share:.0%} of the trial is drain (served after the last "
        f"arrival, nothing arriving behind): too short to stand for the long run; "
        f"-n {enough_requests(metrics)} would do, or a steady-state trial (no --whole)"
    )


def worst_note(labelled: Sequence[tuple[str, Metrics]]) -> str | None:
    """One line for several runs: how many are too short, and `drain_note` of the one with the
    largest drain; None when none is."""
    short = [(label, m) for label, m in labelled if too_short(m)]
    if not short:
        return None
    label, metrics = max(short, key=lambda pair: pair[1].drain_share)
    note = drain_note(label, metrics)
    return f"{len(short)} of {len(labelled)} runs too short; the longest drain: {note}"
