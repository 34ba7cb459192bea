"""The window split of eq. 9: the exact minimizer equals an exhaustive scan; the paper's
ternary search equals it when the cost is convex, and here is where it is not."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from proofs.cases import FillCase, fill_cases, grid_fill_cases, targets
from proofs.split_oracle import TOLERANCE, feasible, judge_split, split_range
from slidingpolicy.pricing.model import LatencyPredictor, LinearModel
from slidingpolicy.pricing.split import COST_TIE, exact_split, ternary_split, two_step_cost
from slidingpolicy.testing.strategies import predictors

EXACT_CASES = 400
TIE_CASES = 300
CONVEX_CASES = 200

Problem = tuple[FillCase, int, int, float]


@st.composite
def problems(draw: st.DrawFn, grid: bool = False) -> Problem:
    """A fill, B_Σ ≤ Σr, a cap with B_Σ ≤ 2·cap (as the chunker's B_Σ always is), and a
    deadline: none, or a fraction or exact value of T̂₁ over the range. With `grid`, the
    predictor's weights lie on a grid (`cases.grid_linear_models`), where ties are exact."""
    case = draw(grid_fill_cases() if grid else fill_cases())
    budget_sum = draw(st.integers(0, case.total))
    cap = draw(st.integers(max(1, (budget_sum + 1) // 2), budget_sum + 8))
    top = min(budget_sum, cap)
    deadline = draw(st.one_of(st.just(math.inf), targets(case, top)))
    return case, budget_sum, cap, deadline


@pytest.mark.slow
@settings(max_examples=EXACT_CASES, deadline=None)
@given(problems())
def test_exact_split_equals_exhaustive_scan(problem: Problem) -> None:
    """400 generated cases: exact_split's cost equals the scan's minimum within 1e-12 s, it
    meets the deadline, and when nothing in range does, it is the scan's fallback b."""
    case, budget_sum, cap, deadline = problem
    priced = case.priced()
    found = exact_split(priced, budget_sum, cap, deadline)
    assert judge_split(priced, found, budget_sum, cap, deadline) is None


@pytest.mark.slow
@settings(max_examples=TIE_CASES, deadline=None)
@given(problems(grid=True))
def test_exact_split_takes_the_largest_of_equal_costs(problem: Problem) -> None:
    """No deferral (docs/decisions.md): no feasible b' > b in range costs at most
    cost(b)·(1 + COST_TIE), on 300 grid-weight cases where costs equal in exact arithmetic
    differ only by rounding. Exact float comparison fails this (tests/stages/
    test_worked_example.py::test_step_6 is one such plateau)."""
    case, budget_sum, cap, deadline = problem
    priced = case.priced()
    found = exact_split(priced, budget_sum, cap, deadline)
    assert judge_split(priced, found, budget_sum, cap, deadline) is None
    if found not in split_range(budget_sum, cap):
        return
    cost = two_step_cost(priced, found, budget_sum)
    for later in range(found + 1, min(budget_sum, cap) + 1):
        if feasible(priced, later, deadline):
            assert two_step_cost(priced, later, budget_sum) > cost + COST_TIE * cost, later


@st.composite
def convex_problems(draw: st.DrawFn) -> Problem:
    """The sufficient condition of proofs/split.md: one request holds the whole window
    (B_Σ ≤ r), and both chunks stay ≥ 2 over the range (B_Σ − cap ≥ 2, cap ≤ B_Σ − 2), under
    the seven-feature predictor (a tile-aware one adds steps, and the cost is not convex)."""
    remaining = draw(st.integers(6, 2000))
    budget_sum = draw(st.integers(6, remaining))
    cap = draw(st.integers((budget_sum + 1) // 2, budget_sum - 2))
    decodes = draw(st.lists(st.integers(1, 3000), max_size=3))
    case = FillCase(draw(predictors()), decodes, (remaining,), (draw(st.integers(0, 3000)),))
    deadline = draw(st.one_of(st.just(math.inf), targets(case, min(budget_sum, cap))))
    return case, budget_sum, cap, deadline


@settings(max_examples=CONVEX_CASES, deadline=None)
@given(convex_problems())
def test_ternary_split_is_exact_when_one_request_holds_the_window(problem: Problem) -> None:
    """200 generated cases under split.md's condition: the scanned cost is convex on the
    range (second differences ≥ −1e-12 s) and ternary_split is optimal."""
    case, budget_sum, cap, deadline = problem
    priced = case.priced()
    costs = [two_step_cost(priced, b, budget_sum) for b in split_range(budget_sum, cap)]
    for left, mid, right in zip(costs, costs[1:], costs[2:], strict=False):
        assert left - 2 * mid + right >= -TOLERANCE
    found = ternary_split(priced, budget_sum, cap, deadline)
    assert judge_split(priced, found, budget_sum, cap, deadline) is None


def _flat(intercept: float, x7: float = 0.0) -> LinearModel:
    return LinearModel(intercept, (0.0,) * 6 + (x7,))


def test_ternary_misses_on_a_plateau_across_scenarios_regression() -> None:
    """Minimal case found by hypothesis (50 000 tries): no decodes, r = (1, 4), u = (0, 0),
    B_Σ = 5, cap = 4, no deadline; only the pure-prefill model costs anything (intercept
    1/64). Over b = 1..4 the cost is (1, 1, 1, 0)/64: for b ≤ 3 one of the two iterations
    holds a chunk ≥ 2 and no 1-token entry (pure prefill); only b = 4 gives a 1-token entry
    to both (r₀ now, the last token of r₁ next: mixed, then decode). The probes b = 2, 3
    tie, ternary search keeps the left part and ends at 3."""
    predictor = LatencyPredictor(_flat(0.0), _flat(1 / 64), _flat(0.0), fallback=_flat(0.0))
    priced = FillCase(predictor, (), (1, 4), (0, 0)).priced()
    costs = [two_step_cost(priced, b, 5) * 64 for b in split_range(5, 4)]
    assert costs == [1, 1, 1, 0]
    assert ternary_split(priced, 5, 4, math.inf) == 3
    assert exact_split(priced, 5, 4, math.inf) == 4


def test_ternary_misses_one_token_chunks_under_one_linear_model_regression() -> None:
    """Minimal case with one model for every scenario (hypothesis, 100 000 tries): one
    decode, r = (2, 2, 39), u = 0, B_Σ = cap = 43, no deadline, T̂ = 2e-4·x6 (prefill tokens
    in chunks ≥ 2). Eq. 4 counts a 1-token chunk as a decode, so a split that leaves one
    token of a request to either iteration saves 2e-4 per such token: the cost over b is
    43, 41, 43, 41, 43, 42, 43, …, 43, 42, 43 (×2e-4), minimum at b = 1 and 3. Ternary
    search ends at b = 5 (42·2e-4)."""
    model = LinearModel(0.0, (0.0, 0.0, 0.0, 0.0, 0.0, 2e-4, 0.0))
    predictor = LatencyPredictor(model, model, model, fallback=model)
    priced = FillCase(predictor, (1,), (2, 2, 39), (0, 0, 0)).priced()
    units = [round(two_step_cost(priced, b, 43) / 2e-4) for b in range(44)]
    assert units[:7] == [43, 41, 43, 41, 43, 42, 43]
    assert units[-2:] == [42, 43]
    assert ternary_split(priced, 43, 43, math.inf) == 5
    assert exact_split(priced, 43, 43, math.inf) in (1, 3)
