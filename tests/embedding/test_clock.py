"""The loop's one clock: monotonic seconds from its start; an engine's timestamp enters once,
as an age."""

from __future__ import annotations

import time

from hypothesis import given
from hypothesis import strategies as st

from slidingpolicy.embedding import Clock


def test_the_clock_counts_from_its_start_on_the_monotonic_clock() -> None:
    readings = iter([100.0, 100.5, 103.0])
    clock = Clock(lambda: next(readings))
    assert [clock.now(), clock.now()] == [0.5, 3.0]
    assert Clock()._read is time.perf_counter


@given(st.floats(0, 1e6), st.floats(-1e6, 1e6))
def test_an_arrival_is_never_before_the_start_nor_after_now(now: float, age: float) -> None:
    arrival = Clock.arrival(now, age)
    assert 0.0 <= arrival <= now
    if 0.0 <= age <= now:
        assert arrival == now - age
