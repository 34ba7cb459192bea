"""Arrival processes: Poisson at a rate, a trace's own times, or a burst (the paper's transient
overload).

Every process is a frozen record; `arrival_times` turns one into `n` non-decreasing times in
seconds, drawing from the caller's generator. Rates lie between `MIN_RATE` and `MAX_RATE`, and
the times they give within the `_validate.MAX_SECONDS` a record holds.
"""

from __future__ import annotations

import math

import attrs
import numpy as np
from numpy.typing import NDArray

from slidingpolicy import _validate
from slidingpolicy.errors import InvalidRecordError

FloatArray = NDArray[np.float64]

MIN_RATE = 1e-6
"""The lowest arrival rate (req/s): one request in 11.6 days. Below it the gaps run past any
clock (at 1e-300 req/s the first request arrives at 1e300 s, where time stops)."""
MAX_RATE = 1e6
"""The highest arrival rate (req/s): a million requests a second, far above what one engine
serves."""
RATE_RANGE = (
    f"between {MIN_RATE:g} and {MAX_RATE:g} req/s (one request in 11.6 days to a million a second)"
)


def _rate(record: str, field: str, value: float) -> None:
    if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
        raise InvalidRecordError(record, field, f"={value!r} must be a finite rate > 0 (req/s)")
    if not MIN_RATE <= value <= MAX_RATE:
        raise InvalidRecordError(record, field, f"={value:g} must be {RATE_RANGE}")


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
        _validate.seconds("burst arrivals", "start", self.start)
        _validate.duration("burst arrivals", "duration", self.duration)


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
    """`n` arrival times in seconds, none beyond `MAX_SECONDS`; `TraceTimes` needs the
    trace's times (at least `n`)."""
    times = _times(process, n, rng, trace_times)
    last = float(times[-1]) if times.size else 0.0
    if last > _validate.MAX_SECONDS:
        name = type(process).__name__.lower()
        raise InvalidRecordError(
            f"{name} arrivals",
            "rate",
            f"={_rate_of(process)!r} spreads {n} requests over {last:.3g} s, beyond the "
            f"{_validate.MAX_SECONDS:g} s a record holds: raise the rate",
        )
    return times


def _rate_of(process: ArrivalProcess) -> float | None:
    return process.base_rate if isinstance(process, Burst) else process.rate


def _times(
    process: ArrivalProcess, n: int, rng: np.random.Generator, trace_times: FloatArray | None
) -> FloatArray:
    """`arrival_times`, unchecked."""
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
