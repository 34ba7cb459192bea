"""Field checks shared by the records: each raises `InvalidRecordError` naming record and field.

`record` is the record's name or a callable giving it, called only on failure so that valid
records (the hot path) never format a message.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TypeVar

from slidingpolicy.errors import InvalidRecordError

Name = str | Callable[[], str]
T = TypeVar("T")


def fail(record: Name, field: str, problem: str) -> InvalidRecordError:
    """The error for `field` of `record`."""
    return InvalidRecordError(record if isinstance(record, str) else record(), field, problem)


def integer(record: Name, field: str, value: object, minimum: int) -> int:
    """An int (not a bool) of at least `minimum`."""
    if type(value) is int and value >= minimum:
        return value
    if isinstance(value, bool) or not isinstance(value, int):
        raise fail(record, field, f"must be an int, got {value!r}")
    raise fail(record, field, f"={value} must be >= {minimum}")


_INF = math.inf

MAX_SECONDS = 1e10
"""The latest time and the longest duration a record holds, in seconds (317 years: an epoch
timestamp fits). A float there still tells 2 µs apart; at 1e300 s, now + latency == now and
a run's clock stops."""


def finite(record: Name, field: str, value: object) -> float:
    """A finite real number (int or float, not a bool)."""
    if type(value) is float and -_INF < value < _INF:
        return value
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise fail(record, field, f"must be a number, got {value!r}")
    if not math.isfinite(value):
        raise fail(record, field, f"={value} must be finite")
    return float(value)


def positive(record: Name, field: str, value: object) -> float:
    """A finite number > 0."""
    if type(value) is float and 0.0 < value < _INF:
        return value
    number = finite(record, field, value)
    if number <= 0.0:
        raise fail(record, field, f"={number} must be > 0")
    return number


def non_negative(record: Name, field: str, value: object) -> float:
    """A finite number >= 0."""
    if type(value) is float and 0.0 <= value < _INF:
        return value
    number = finite(record, field, value)
    if number < 0.0:
        raise fail(record, field, f"={number} must be >= 0")
    return number


def _beyond(record: Name, field: str, number: float) -> InvalidRecordError:
    return fail(
        record,
        field,
        f"={number:g} s is beyond {MAX_SECONDS:g} s (317 years), the longest time a record "
        "holds (a float clock there still tells 2 µs apart)",
    )


def seconds(record: Name, field: str, value: object) -> float:
    """A time in seconds: finite, >= 0 and at most `MAX_SECONDS`."""
    if type(value) is float and 0.0 <= value <= MAX_SECONDS:
        return value
    return _within_max(record, field, non_negative(record, field, value))


def duration(record: Name, field: str, value: object) -> float:
    """A duration in seconds: finite, > 0 and at most `MAX_SECONDS`."""
    if type(value) is float and 0.0 < value <= MAX_SECONDS:
        return value
    return _within_max(record, field, positive(record, field, value))


def _within_max(record: Name, field: str, number: float) -> float:
    """`number` if it is at most `MAX_SECONDS`; the slow path of `seconds` and `duration`."""
    if number > MAX_SECONDS:
        raise _beyond(record, field, number)
    return number


def flag(record: Name, field: str, value: object) -> bool:
    """A bool."""
    if not isinstance(value, bool):
        raise fail(record, field, f"must be a bool, got {value!r}")
    return value


def instance(record: Name, field: str, value: object, kind: type[T]) -> T:
    """A `kind` (e.g. the policy state a policy's `init` made)."""
    if not isinstance(value, kind):
        raise fail(record, field, f"must be a {kind.__name__}, got {type(value).__name__}")
    return value
