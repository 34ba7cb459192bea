"""The knapsack DP (eq. 19–21) equals brute force on up to 12 items."""

from __future__ import annotations

import itertools
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from slidingpolicy.stages.knapsack import knapsack, max_count

items = st.lists(st.tuples(st.integers(1, 400), st.floats(0.5, 20.0)), max_size=12)


def subsets(weights: list[int], capacity: int) -> list[tuple[int, ...]]:
    """Every subset of indices that fits."""
    return [
        s
        for size in range(len(weights) + 1)
        for s in itertools.combinations(range(len(weights)), size)
        if sum(weights[i] for i in s) <= capacity
    ]


@given(items, st.integers(0, 2000))
@settings(max_examples=300)
def test_dp_equals_brute_force(pairs: list[tuple[int, float]], capacity: int) -> None:
    """Same count, same value (to 1e-9), and — unless values tie within 1e-9 — same weight."""
    weights, values = [w for w, _ in pairs], [v for _, v in pairs]
    chosen = knapsack(weights, values, capacity)
    assert len(set(chosen)) == len(chosen)
    assert sum(weights[i] for i in chosen) <= capacity
    fitting = subsets(weights, capacity)
    count = max(len(s) for s in fitting)
    largest = [s for s in fitting if len(s) == count]
    value = max(sum(values[i] for i in s) for s in largest)
    assert len(chosen) == count
    assert math.isclose(sum(values[i] for i in chosen), value, rel_tol=1e-9)
    near = [s for s in largest if math.isclose(sum(values[i] for i in s), value, rel_tol=1e-9)]
    if len({sum(weights[i] for i in s) for s in near}) == 1:
        assert sum(weights[i] for i in chosen) == sum(weights[i] for i in near[0])


@given(st.lists(st.integers(1, 100), max_size=12), st.integers(0, 500))
def test_max_count_is_the_largest_fitting_subset(weights: list[int], capacity: int) -> None:
    expected = max(
        (
            size
            for size in range(len(weights) + 1)
            for s in itertools.combinations(weights, size)
            if sum(s) <= capacity
        ),
        default=0,
    )
    assert max_count(weights, capacity) == expected


def test_count_comes_before_value() -> None:
    """Two light items beat one valuable heavy one: eq. 21 ranks |Y| first."""
    assert knapsack([60, 50, 50], [100.0, 1.0, 1.0], 100) == (1, 2)


def test_sums_equal_but_for_rounding_are_a_tie_that_the_heavier_set_wins() -> None:
    """Leaving out either 0.001 item gives the same Σv up to the order of the additions (one
    ulp apart), so eq. 21's weight decides: the set with the 3031-token item."""
    weights = [1] * 9 + [3031]
    values = [1 / 64] * 6 + [64.0, 0.001, 64.20747450813282, 0.001]
    chosen = knapsack(weights, values, 3039)
    assert len(chosen) == 9
    assert sum(weights[i] for i in chosen) == 3039


def test_everything_that_fits_is_taken() -> None:
    assert knapsack([10, 20, 30], [1.0, 1.0, 1.0], 60) == (0, 1, 2)


def test_negative_capacity_takes_nothing() -> None:
    assert knapsack([1, 2], [1.0, 1.0], -1) == ()


@given(items, st.integers(0, 2000))
@settings(max_examples=200)
def test_table_and_subset_comparison_agree(pairs: list[tuple[int, float]], capacity: int) -> None:
    """The DP alone (every shortcut off) reaches the same (count, value) as knapsack()."""
    from slidingpolicy.stages.knapsack import _by_table

    weights, values = [w for w, _ in pairs], [v for _, v in pairs]
    fitting = [i for i, w in enumerate(weights) if w <= capacity]
    table = _by_table(weights, values, capacity, fitting) if fitting else ()
    chosen = knapsack(weights, values, capacity)
    assert len(table) == len(chosen)
    assert math.isclose(sum(values[i] for i in table), sum(values[i] for i in chosen), rel_tol=1e-9)
