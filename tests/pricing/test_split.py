"""The window split (eq. 9): the exact minimizer against an exhaustive scan."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slidingpolicy import LatencyPredictor
from slidingpolicy.pricing import split as split_module
from slidingpolicy.pricing.budget import fill_budget
from slidingpolicy.pricing.queue import PricedQueue
from slidingpolicy.pricing.split import (
    exact_split,
    piece_candidates,
    ternary_split,
    two_step_cost,
    vector_candidates,
    window_split,
)
from slidingpolicy.testing.strategies import predictors

pieces = st.tuples(st.integers(1, 60), st.integers(0, 80))
queues = st.lists(pieces, min_size=1, max_size=6)


@st.composite
def split_cases(draw: st.DrawFn) -> tuple[PricedQueue, int, int, float]:
    """A fill, a window budget B_Σ ≤ its queue, a per-iteration cap and a deadline T_cur."""
    predictor = draw(predictors(tiles=True))
    decodes = draw(st.lists(st.integers(1, 300), max_size=5))
    queue = draw(queues)
    priced = PricedQueue.of_lengths(
        predictor, decodes, [r for r, _ in queue], [u for _, u in queue]
    )
    budget_sum = draw(st.integers(0, priced.total))
    cap = draw(st.integers(max(1, (budget_sum + 1) // 2), max(1, budget_sum + 5)))
    prices = [priced.price(0, b) for b in range(min(budget_sum, cap) + 1)]
    deadline = draw(st.one_of(st.sampled_from(prices), st.floats(0.0, 2 * max(prices) + 1e-6)))
    return priced, budget_sum, cap, deadline


def exhaustive(
    priced: PricedQueue, budget_sum: int, cap: int, deadline: float
) -> tuple[int, float]:
    """The minimum cost over feasible b in range (b = 0 always allowed), by enumeration."""
    lo, hi = max(0, budget_sum - cap), min(budget_sum, cap)
    feasible = [b for b in range(lo, hi + 1) if b == 0 or priced.price(0, b) <= deadline]
    if not feasible:
        b = fill_budget(priced, deadline, lo)
        return b, two_step_cost(priced, b, budget_sum)
    best = min(feasible, key=lambda b: (two_step_cost(priced, b, budget_sum), -b))
    return best, two_step_cost(priced, best, budget_sum)


@pytest.mark.slow
@given(split_cases())
@settings(max_examples=400)
def test_exact_split_attains_the_exhaustive_minimum(
    case: tuple[PricedQueue, int, int, float],
) -> None:
    priced, budget_sum, cap, deadline = case
    b = exact_split(priced, budget_sum, cap, deadline)
    best, cost = exhaustive(priced, budget_sum, cap, deadline)
    assert b == 0 or priced.price(0, b) <= deadline
    assert math.isclose(two_step_cost(priced, b, budget_sum), cost, rel_tol=1e-9, abs_tol=1e-15)
    if max(0, budget_sum - cap) <= best:
        assert max(0, budget_sum - cap) <= b <= min(budget_sum, cap)


@st.composite
def many_piece_cases(draw: st.DrawFn) -> tuple[PricedQueue, int, int, float]:
    """`split_cases` over queues of up to 24 requests, often alike (a burst of one prompt
    length), and a seven-feature predictor: what the vectorized candidates serve."""
    predictor = draw(predictors())
    decodes = draw(st.lists(st.integers(1, 300), max_size=5))
    alike = st.tuples(st.integers(1, 70), st.integers(0, 80)).flatmap(
        lambda one: st.lists(st.just(one), min_size=1, max_size=24)
    )
    queue = draw(st.one_of(alike, st.lists(pieces, min_size=1, max_size=24)))
    priced = PricedQueue.of_lengths(
        predictor, decodes, [r for r, _ in queue], [u for _, u in queue]
    )
    budget_sum = draw(st.integers(1, priced.total))
    cap = draw(st.integers(max(1, (budget_sum + 1) // 2), budget_sum + 5))
    prices = [priced.price(0, b) for b in range(min(budget_sum, cap) + 1)]
    deadline = draw(st.one_of(st.sampled_from(prices), st.floats(0.0, 2 * max(prices) + 1e-6)))
    return priced, budget_sum, cap, deadline


@pytest.mark.slow
@given(many_piece_cases())
@settings(max_examples=300)
def test_vector_candidates_are_the_per_piece_candidates_bit_for_bit(
    case: tuple[PricedQueue, int, int, float],
) -> None:
    """The vectorized candidates of the pieces it takes are exactly `piece_candidates`'
    (same b, same float), so `exact_split` decides the same whichever path it takes."""
    priced, budget_sum, cap, deadline = case
    budget_sum = min(budget_sum, 2 * cap)
    lo_b = max(0, budget_sum - cap)
    hi_b = min(budget_sum, fill_budget(priced, deadline, cap))
    if hi_b <= lo_b:
        return
    first, last = priced.request_at(max(lo_b, 1)), priced.request_at(hi_b)
    ks = np.arange(first, last + 1)
    found, costs, left = vector_candidates(priced, ks, budget_sum, lo_b, hi_b, deadline)
    expected = {
        candidate
        for k in range(first, last + 1)
        if k not in left
        for candidate in piece_candidates(priced, k, budget_sum, lo_b, hi_b, deadline)
    }
    assert set(zip(found.tolist(), costs.tolist(), strict=True)) == expected


@given(case=many_piece_cases())
@settings(max_examples=100, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_exact_split_decides_the_same_on_either_path(
    case: tuple[PricedQueue, int, int, float], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Forcing the vectorized path on every queue, or the per-piece loop, gives one b."""
    priced, budget_sum, cap, deadline = case
    with monkeypatch.context() as patch:
        patch.setattr(split_module, "VECTOR_PIECES", 1)
        vector = exact_split(priced, budget_sum, cap, deadline)
        patch.setattr(split_module, "VECTOR_PIECES", 10**9)
        loop = exact_split(priced, budget_sum, cap, deadline)
    assert vector == loop


@pytest.mark.slow
@given(case=many_piece_cases())
@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_skipping_repeated_pieces_decides_the_same(
    case: tuple[PricedQueue, int, int, float], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pieces `repeated_pieces` skips hold no better b: pricing them too gives one b."""
    priced, budget_sum, cap, deadline = case
    skipping = exact_split(priced, budget_sum, cap, deadline)
    with monkeypatch.context() as patch:
        patch.setattr(split_module, "repeated_pieces", lambda *_: set())
        pricing = exact_split(priced, budget_sum, cap, deadline)
    assert skipping == pricing


@given(split_cases())
@settings(max_examples=200)
def test_ternary_split_meets_the_deadline(case: tuple[PricedQueue, int, int, float]) -> None:
    priced, budget_sum, cap, deadline = case
    b = ternary_split(priced, budget_sum, cap, deadline)
    assert b == 0 or priced.price(0, b) <= deadline
    assert b <= min(budget_sum, cap)


@given(split_cases(), st.integers(3, 4))
@settings(max_examples=100)
def test_longer_windows_meet_the_deadline(
    case: tuple[PricedQueue, int, int, float], k: int
) -> None:
    priced, budget_sum, cap, deadline = case
    b = window_split(priced, budget_sum, cap, deadline, k)
    assert b == 0 or priced.price(0, b) <= deadline
    assert b <= min(budget_sum, cap)


def test_split_of_a_convex_single_request_is_balanced() -> None:
    """With one long prompt and a convex T̂ (eq. 23) the split halves B_Σ (§6.1)."""
    from slidingpolicy import LinearModel

    model = LinearModel(0.01, (0.0, 1e-7, 0.0, 0.0, 0.0, 1e-4, 0.0))
    predictor = LatencyPredictor(model, model, model, fallback=model)
    priced = PricedQueue.of_lengths(predictor, [], [4000], [0])
    assert exact_split(priced, 2000, 2048, 1.0) == 1000


def test_a_window_budget_beyond_two_caps_is_capped() -> None:
    """B_Σ > 2·cap leaves no b with both iterations within the cap; both searches then
    plan as if B_Σ = 2·cap instead of failing."""
    from slidingpolicy import LinearModel

    model = LinearModel(0.01, (0.0, 0.0, 0.0, 0.0, 0.0, 1e-4, 0.0))
    priced = PricedQueue.of_lengths(
        LatencyPredictor(model, model, model, fallback=model), [], [500], [0]
    )
    for split in (exact_split, ternary_split):
        b = split(priced, 400, 100, 1.0)
        assert b == 100
