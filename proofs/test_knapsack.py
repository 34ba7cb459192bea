"""The knapsack DP returns the lexicographic (count, Σv, Σw) optimum (eq. 19–21)."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from proofs.knapsack_oracle import exhaustive, milp, rank_of, value_scale
from proofs.lex import judge, subsets
from slidingpolicy.stages.knapsack import knapsack

MILP_CASES = 150
EXHAUSTIVE_CASES = 300

grid_values = st.integers(1, 256).map(lambda k: k / 64)
"""Multiples of 1/64: every sum is exact, so ties are exact and the weight must break them."""
float_values = st.floats(1e-3, 100.0, allow_nan=False)


@st.composite
def instances(draw: st.DrawFn) -> tuple[list[int], list[float], int]:
    """Up to 14 items, capacity up to 4096, weights often near the capacity's scale."""
    n = draw(st.integers(0, 14))
    capacity = draw(st.integers(0, 4096))
    top = draw(st.sampled_from([8, 64, max(1, capacity), 4096]))
    weights = draw(st.lists(st.integers(1, top), min_size=n, max_size=n))
    values = draw(st.lists(st.one_of(grid_values, float_values), min_size=n, max_size=n))
    return weights, values, capacity


def _check(weights: list[int], values: list[float], capacity: int, use_milp: bool) -> None:
    chosen = knapsack(weights, values, capacity)
    assert sum(weights[i] for i in chosen) <= capacity
    assert len(set(chosen)) == len(chosen)
    found = rank_of(weights, values, chosen)
    scale = value_scale(values)
    every = subsets(weights, values, capacity)
    near = every.near_tied(scale)
    oracle = milp(weights, values, capacity) if use_milp else exhaustive(weights, values, capacity)
    assert judge(found, oracle, scale, near) is None, (found, oracle)


@pytest.mark.slow
@settings(max_examples=MILP_CASES, deadline=None)
@given(instances())
@example(([3, 3, 4], [1.0, 1.0, 2.0], 6))
@example(([5, 4], [1.0, 1.0], 5))
def test_knapsack_matches_lexicographic_milp(case: tuple[list[int], list[float], int]) -> None:
    """150 generated cases (+2 explicit): count exact, Σv within 1e-9 of Σ all values, Σw
    exact unless values are near-tied — against three sequential HiGHS solves."""
    _check(*case, use_milp=True)


@settings(max_examples=EXHAUSTIVE_CASES, deadline=None)
@given(instances())
@example(([1] * 9 + [3031], [1 / 64] * 6 + [64.0, 0.001, 64.20747450813282, 0.001], 3039))
@example(
    (
        [1, 1, 1, 1, 1, 3, 1, 1, 46, 2, 55, 55],
        [1 / 64] * 6 + [1.0, 1.2068100318618633, 60.0] + [1 / 64] * 3,
        111,
    )
)
def test_knapsack_matches_exhaustive_enumeration(case: tuple[list[int], list[float], int]) -> None:
    """300 generated cases: the same comparison against all 2^n subsets."""
    _check(*case, use_milp=False)
