"""The statistics of a latency, the latencies measured, and the units they are shown in."""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import pairwise

import attrs

from slidingpolicy.metrics.moments import moments
from slidingpolicy.metrics.percentiles import PERCENTILES, FloatArray, percentiles


@attrs.frozen(slots=True)
class Stats:
    """Mean, median, standard deviation, p90 and p99 of one latency (seconds; NaN if none)."""

    mean: float
    median: float
    std: float
    p90: float
    p99: float

    @classmethod
    def of(cls, values: FloatArray) -> Stats:
        """The statistics of `values` (`slidingpolicy.metrics`)."""
        mean, std = moments(values)
        median, p90, p99 = percentiles(values, PERCENTILES)
        return cls(mean, median, std, p90, p99)


STAT_NAMES = ("mean", "median", "std", "p90", "p99")
"""The statistics of every latency, in the order they are shown."""

LATENCIES = {
    "ttft": "TTFT (time to first token)",
    "tpot": "TPOT (time per output token)",
    "tbt": "ITL (inter-token latency, TBT)",
    "e2e": "E2E (end-to-end latency)",
}
"""Each latency's field prefix in `Metrics` and its name on screen."""


DURATION_UNITS = (("ms", 1e-3), ("s", 1.0), ("min", 60.0), ("h", 3600.0))
"""The units durations are shown in, with their length in seconds."""


def duration_unit(seconds: Sequence[float]) -> tuple[str, float]:
    """The unit that reads for durations this long: ms below 1 s, s below a minute, min below
    an hour, h beyond; chosen on the largest finite value (ms when there is none)."""
    finite = [abs(v) for v in seconds if math.isfinite(v)]
    largest = max(finite, default=0.0)
    for (name, size), (_, following) in pairwise(DURATION_UNITS):
        if largest < following:
            return name, size
    return DURATION_UNITS[-1]


def stat_fields(latency: str) -> tuple[str, ...]:
    """The `Metrics` fields of `latency`'s statistics, in `STAT_NAMES` order (the median is
    the p50 field)."""
    if latency not in LATENCIES:
        raise KeyError(f"{latency!r} is not one of {tuple(LATENCIES)}")
    return tuple(f"{latency}_{'p50' if s == 'median' else s}" for s in STAT_NAMES)
