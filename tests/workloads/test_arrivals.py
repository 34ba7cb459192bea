"""Arrival processes: rates hold, times never go back, bad rates are refused."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from slidingpolicy.errors import InvalidRecordError
from slidingpolicy.workloads import Burst, Poisson, TraceTimes, arrival_times

rates = st.floats(0.01, 1000.0)


def test_poisson_arrivals_have_the_mean_rate() -> None:
    times = arrival_times(Poisson(4.0), 40_000, np.random.default_rng(0))
    assert times.size / times[-1] == pytest.approx(4.0, rel=0.03)


def test_poisson_gaps_are_exponential() -> None:
    gaps = np.diff(arrival_times(Poisson(2.0), 40_000, np.random.default_rng(1)))
    assert np.std(gaps) == pytest.approx(np.mean(gaps), rel=0.03)


@given(
    st.one_of(
        st.builds(Poisson, rates),
        st.builds(Burst, rates, rates, st.floats(0, 100), st.floats(0.1, 100)),
    ),
    st.integers(1, 500),
    st.integers(0, 2**32),
)
def test_times_are_non_decreasing_non_negative_and_seeded(
    process: Poisson | Burst, n: int, seed: int
) -> None:
    times = arrival_times(process, n, np.random.default_rng(seed))
    assert times.size == n
    assert times[0] >= 0
    assert np.all(np.diff(times) >= 0)
    assert np.array_equal(times, arrival_times(process, n, np.random.default_rng(seed)))


def test_a_burst_raises_the_rate_inside_its_window_only() -> None:
    burst = Burst(base_rate=2.0, burst_rate=20.0, start=100.0, duration=50.0)
    times = arrival_times(burst, 3000, np.random.default_rng(2))
    inside = np.count_nonzero((times >= 100.0) & (times < 150.0))
    before = np.count_nonzero(times < 100.0)
    assert inside == pytest.approx(20.0 * 50.0, rel=0.1)
    assert before == pytest.approx(2.0 * 100.0, rel=0.2)
    after = times[(times >= 150.0)]
    assert after.size / (after[-1] - 150.0) == pytest.approx(2.0, rel=0.1)


def test_trace_times_replay_from_zero() -> None:
    trace = np.array([5.0, 6.0, 8.0, 9.0])
    times = arrival_times(TraceTimes(), 3, np.random.default_rng(0), trace)
    assert times.tolist() == [0.0, 1.0, 3.0]


def test_trace_times_rescale_to_the_target_mean_rate() -> None:
    trace = np.array([0.0, 1.0, 3.0, 4.0])
    times = arrival_times(TraceTimes(rate=3.0), 4, np.random.default_rng(0), trace)
    assert (times.size - 1) / times[-1] == pytest.approx(3.0)
    assert times.tolist() == pytest.approx([0.0, 1 / 4, 3 / 4, 1.0])


def test_trace_times_need_a_trace_long_enough() -> None:
    with pytest.raises(InvalidRecordError, match="no arrival times"):
        arrival_times(TraceTimes(), 3, np.random.default_rng(0))
    with pytest.raises(InvalidRecordError, match="2 < 3"):
        arrival_times(TraceTimes(), 3, np.random.default_rng(0), np.array([0.0, 1.0]))


@pytest.mark.parametrize("rate", [0.0, -1.0, math.nan, math.inf])
def test_a_bad_rate_is_refused(rate: float) -> None:
    with pytest.raises(InvalidRecordError, match="rate"):
        Poisson(rate)
    with pytest.raises(InvalidRecordError, match="burst_rate"):
        Burst(1.0, rate, 0.0, 1.0)
    with pytest.raises(InvalidRecordError, match="rate"):
        TraceTimes(rate)


def test_a_bad_burst_window_is_refused() -> None:
    with pytest.raises(InvalidRecordError, match="start"):
        Burst(1.0, 2.0, -1.0, 1.0)
    with pytest.raises(InvalidRecordError, match="duration"):
        Burst(1.0, 2.0, 0.0, 0.0)
