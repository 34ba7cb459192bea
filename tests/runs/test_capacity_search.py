"""The capacity search finds the threshold rate to 2.5%, from above or below."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slidingpolicy.errors import InvalidRecordError
from slidingpolicy.runs.capacity_search import (
    MAX_RATE,
    MAX_TRIALS,
    MIN_RATE,
    PRECISION,
    CapacityResult,
    _search,
    capacities,
    capacity_search,
    spreads,
)
from slidingpolicy.runs.specs import RunSpec, WorkloadSpec


def _drive(
    threshold: float, start: float, k: int, known: list[tuple[float, float]]
) -> tuple[float, float, int]:
    search = _search(start, PRECISION, 0.99, k, known)
    trials = 0
    try:
        rates = next(search)
        while True:
            trials += len(rates)
            rates = search.send([1.0 if r <= threshold else 0.5 for r in rates])
    except StopIteration as done:
        passing, failing = done.value
    return passing, failing, trials


@pytest.mark.parametrize("threshold", [0.05, 0.7, 1.0, 3.3, 40.0])
@pytest.mark.parametrize("k", [1, 2])
def test_search_brackets_the_threshold_to_precision(threshold: float, k: int) -> None:
    passing, failing, _ = _drive(threshold, 1.0, k, [])
    assert passing <= threshold < failing
    assert failing / passing <= 1 + PRECISION


@given(
    st.floats(MIN_RATE, MAX_RATE),
    st.floats(MIN_RATE, MAX_RATE),
)
def test_a_search_from_any_allowed_start_takes_at_most_max_trials(
    start: float, threshold: float
) -> None:
    passing, failing, trials = _drive(threshold, start, 1, [])
    assert passing <= threshold < failing
    assert trials <= MAX_TRIALS


@pytest.mark.parametrize("start", [1e308, 1e-300, MAX_RATE * 1.01, MIN_RATE / 1.01])
def test_a_start_outside_the_rates_a_search_explores_is_refused(start: float) -> None:
    with pytest.raises(InvalidRecordError, match=r"capacity search: start=.* must be between"):
        capacities([RunSpec("sarathi")], start)


@pytest.mark.parametrize("k", [1, 2])
def test_a_run_that_passes_at_every_rate_stops_at_the_highest_rate_tried(k: int) -> None:
    """Never a rate of inf: the bisection starts only once some rate failed."""
    search = _search(1.0, PRECISION, 0.99, k, [])
    tried: list[float] = []
    try:
        rates = next(search)
        while True:
            tried += rates
            rates = search.send([1.0] * len(rates))
    except StopIteration as done:
        passing, failing = done.value
    assert all(math.isfinite(r) for r in tried), tried
    assert passing == max(tried) >= MAX_RATE
    assert failing == math.inf


def test_search_starts_from_known_trials() -> None:
    passing, failing, trials = _drive(1.3, 1.0, 1, [(1.0, 1.0), (2.0, 0.4)])
    assert passing <= 1.3 < failing
    assert trials <= math.ceil(math.log2(math.log(2) / math.log(1 + PRECISION))) + 1


def test_capacity_of_a_real_policy_is_reproducible() -> None:
    base = RunSpec("sarathi", workload=WorkloadSpec(requests=40))
    first = capacity_search(base, start=1.0, workers=1)
    second = capacity_search(base, start=1.0, workers=1)
    assert first == second
    assert first.capacity > 0
    assert first.failing / first.capacity <= 1 + PRECISION


def test_capacity_does_not_depend_on_the_number_of_workers() -> None:
    """The same rates are tried and the same capacity found with one worker or two
    (issue 14: the k-section's k came from the worker count)."""
    base = RunSpec("sarathi", workload=WorkloadSpec(requests=40))
    assert capacity_search(base, start=1.0, workers=1) == capacity_search(
        base, start=1.0, workers=2
    )


def test_spreads_give_each_policys_mean_and_range_over_seeds() -> None:
    found = [
        CapacityResult("a", 1.0, 1.02, (), 0),
        CapacityResult("b", 3.0, 3.05, (), 0),
        CapacityResult("a", 2.0, 2.04, (), 1),
    ]
    (a, b) = spreads(found)
    assert (a.policy, a.capacities, a.mean, a.low, a.high) == ("a", (1.0, 2.0), 1.5, 1.0, 2.0)
    assert (b.policy, b.mean) == ("b", 3.0)


def test_search_stops_at_the_highest_rate_when_every_rate_passes() -> None:
    """A policy that passes up to MAX_RATE ends there, failing rate unknown (infinite), and
    never asks for an infinite rate."""
    passing, failing, _ = _drive(1e9, 1.0, 1, [])
    assert passing >= MAX_RATE
    assert math.isinf(failing)
