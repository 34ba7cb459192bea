"""TimeToBudget returns the largest b ≤ limit whose batch meets the target (eq. 3, §7.4)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from proofs.budget_oracle import (
    bisect_budget,
    explicit_latencies,
    scan_explicit,
    scan_price,
)
from proofs.cases import FillCase, fill_cases, targets
from slidingpolicy.pricing.budget import fill_budget, time_to_budget
from slidingpolicy.pricing.model import LatencyPredictor, LinearModel
from slidingpolicy.records.request import Request

PRICE_CASES = 400
EXPLICIT_CASES = 150


@st.composite
def problems(draw: st.DrawFn, max_requests: int = 6) -> tuple[FillCase, int, float]:
    """A fill, a limit anywhere in [0, Σr + 10], and a target."""
    case = draw(fill_cases(max_requests=max_requests))
    limit = draw(st.integers(0, case.total + 10))
    return case, limit, draw(targets(case, min(limit, case.total)))


@pytest.mark.slow
@settings(max_examples=PRICE_CASES, deadline=None)
@given(problems())
def test_fill_budget_equals_linear_scan_of_price(problem: tuple[FillCase, int, float]) -> None:
    """400 generated cases: fill_budget equals the scan over b of PricedQueue.price(0, b), exactly
    (same arithmetic, so no tolerance)."""
    case, limit, target = problem
    priced = case.priced()
    assert fill_budget(priced, target, limit) == scan_price(priced, target, limit)


@settings(max_examples=EXPLICIT_CASES, deadline=None)
@given(problems(max_requests=4))
def test_fill_budget_equals_scan_of_explicit_batches(problem: tuple[FillCase, int, float]) -> None:
    """150 generated cases: fill_budget is accepted by a scan that builds every greedy batch
    and calls LatencyPredictor.predict — exact up to float ties of 1e-12 s."""
    case, limit, target = problem
    priced = case.priced()
    latencies = explicit_latencies(
        case.predictor, case.decode_contexts, case.remaining, case.contexts, limit
    )
    found = fill_budget(priced, target, limit)
    assert found in scan_explicit(latencies, target)


def _requests(case: FillCase) -> tuple[list[Request], list[Request]]:
    """Decodes with prompt u and one token generated (context u + 1); the queue in order."""
    decodes = [Request(f"d{i}", 0.0, u, u, 1, 1.0, 1.0) for i, u in enumerate(case.decode_contexts)]
    queue = [
        Request(f"q{i}", 0.0, u + r, u, 0, 1.0, 1.0)
        for i, (r, u) in enumerate(zip(case.remaining, case.contexts, strict=True))
    ]
    return decodes, queue


@settings(max_examples=50, deadline=None)
@given(problems(max_requests=4))
def test_time_to_budget_on_requests_equals_scan(problem: tuple[FillCase, int, float]) -> None:
    """50 generated cases: the Request-level entry point gives the scan's answer too."""
    case, limit, target = problem
    decodes, queue = _requests(case)
    contexts = [d.context_tokens for d in decodes]
    priced = FillCase(case.predictor, contexts, case.remaining, case.contexts).priced()
    assert time_to_budget(case.predictor, decodes, queue, target, limit) == scan_price(
        priced, target, limit
    )


def _flat(intercept: float) -> LinearModel:
    return LinearModel(intercept, (0.0,) * 7)


def test_plain_bisection_is_wrong_regression() -> None:
    """Minimal case found by hypothesis (`hypothesis.find`, 20 000 tries): no decodes, queue
    r = (2, 1) with u = (0, 0), only the pure-prefill model has a cost (intercept 1/64),
    target 0. T̂(b) for b = 0..3 is 0, 0, 1/64, 0: b = 1 is a 1-token chunk (a decode by
    eq. 4), b = 2 is pure prefill, b = 3 is mixed (the r = 1 request is a decode). Bisection
    answers 1; the answer is 3, which fill_budget finds."""
    predictor = LatencyPredictor(_flat(0.0), _flat(1 / 64), _flat(0.0), fallback=_flat(0.0))
    case = FillCase(predictor, (), (2, 1), (0, 0))
    priced = case.priced()
    assert [priced.price(0, b) for b in range(4)] == [0.0, 0.0, 1 / 64, 0.0]
    assert bisect_budget(lambda b: priced.price(0, b), 0.0, 3) == 1
    assert scan_price(priced, 0.0, 3) == 3
    assert fill_budget(priced, 0.0, 3) == 3
