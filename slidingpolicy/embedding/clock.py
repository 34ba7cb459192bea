"""The one clock of a policy's life in an engine.

`now`, every arrival and every measured step time are seconds on one monotonic clock
(`time.perf_counter`), counted from when the loop began. A wall clock (`time.time`) is not
one: NTP steps it, and a step of it between two snapshots would move every deadline a
request has (eq. 1) at once, or give a step a negative time. An engine's own timestamp of a
request enters once, as an age, when the loop first sees the request: its arrival is `now`
less that age (at least 0: a request that came before the loop began arrived at 0), the ages
of one snapshot all read against one reading of the engine's clock, so that requests keep
the order the engine stamped them in.
"""

from __future__ import annotations

import time
from collections.abc import Callable


class Clock:
    """Seconds since it was made, on the monotonic `read` (`time.perf_counter`)."""

    def __init__(self, read: Callable[[], float] = time.perf_counter) -> None:
        self._read = read
        self._epoch = read()

    def now(self) -> float:
        """Seconds since the clock was made."""
        return self._read() - self._epoch

    @staticmethod
    def arrival(now: float, age: float) -> float:
        """The arrival of a request `age` seconds old (on the engine's own clock) at `now`."""
        return min(max(now - age, 0.0), now)
