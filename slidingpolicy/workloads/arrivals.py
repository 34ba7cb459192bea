"""Arrival processes: Poisson at a rate, a trace's own times, or a burst (the paper's transient
overload).

Every process is a frozen record; `arrival_times` turns one into `n` non-decreasing times in
seconds, drawing from the caller's generator.
"""

from __future__ import annotations

import math

import attrs
import numpy as np
from numpy.typing import NDArray

from slidingpolicy.errors import InvalidRecordError

FloatArray = NDArray[np.float64]


def _rate(record: str, field: str, value: float) -> None:
    if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
        raise InvalidRecordError(record, field, f"={value!r} must be a finite rate > 0 (req/s)")


@attrs.frozen(slots=True)
class Poisson:
    """Exponential gaps at `rate` requests per second."""

    rate: float

    def __attrs_post_init__(self) -> None:
        _rate("poisson arrivals", "rate", self.rate)


@attrs.frozen(slots=True)
class Burst:
    """Poisson at `base_rate`, switching to `burst_rate` over [start, start + duration)."""

    base_rate: float
    burst_rate: float
    start: float
    duration: float

    def __attrs_post_init__(self) -> None:
        _rate("burst arrivals", "base_rate", self.base_rate)
        _rate("burst arrivals", "burst_rate", self.burst_rate)
        if not (math.isfinite(self.start) and self.start >= 0):
            raise InvalidRecordError("burst arrivals", "start", f"={self.start} must be >= 0")
        _rate("burst arrivals", "duration", self.duration)


@attrs.frozen(slots=True)
class TraceTimes:
    """The trace's own arrival times, optionally rescaled so their mean rate is `rate`."""

    rate: float | None = None

    def __attrs_post_init__(self) -> None:
        if self.rate is not None:
            _rate("trace arrivals", "rate", self.rate)


ArrivalProcess = Poisson | Burst | TraceTimes


def arrival_times(
    process: ArrivalProcess,
    n: int,
    rng: np.random.Generator,
    trace_times: FloatArray | None = None,
) -> FloatArray:
    """`n` arrival times in seconds; `TraceTimes` needs the trace's times (at least `n`)."""
    if isinstance(process, Poisson):
        gaps: FloatArray = rng.exponential(1.0 / process.rate, n)
        return np.cumsum(gaps)
    if isinstance(process, Burst):
        work: FloatArray = np.cumsum(rng.exponential(1.0, n))
        return _burst_times(process, work)
    if trace_times is None:
        raise InvalidRecordError("trace arrivals", "trace", "has no arrival times to replay")
    if trace_times.size < n:
        raise InvalidRecordError("trace arrivals", "trace", f"has {trace_times.size} < {n} times")
    times: FloatArray = trace_times[:n] - trace_times[0]
    if process.rate is None:
        return times
    span = float(times[-1])
    if n < 2 or span <= 0:
        raise InvalidRecordError("trace arrivals", "rate", "cannot rescale times spanning 0 s")
    rescaled: FloatArray = times * ((n - 1) / span / process.rate)
    return rescaled


def _burst_times(burst: Burst, work: FloatArray) -> FloatArray:
    """Invert the cumulative intensity of the burst profile at unit-rate arrival `work`."""
    before = burst.base_rate * burst.start
    during = burst.burst_rate * burst.duration
    end = burst.start + burst.duration
    return np.where(
        work < before,
        work / burst.base_rate,
        np.where(
            work < before + during,
            burst.start + (work - before) / burst.burst_rate,
            end + (work - before - during) / burst.base_rate,
        ),
    )
