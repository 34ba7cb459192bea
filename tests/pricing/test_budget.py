"""TimeToBudget (§7.4): exact against a linear scan, although T̂ is not monotone in b."""

from __future__ import annotations

from bisect import bisect_right

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slidingpolicy import LatencyPredictor, LinearModel, Request, time_to_budget
from slidingpolicy.pricing.budget import fill_budget
from slidingpolicy.pricing.queue import PricedQueue
from slidingpolicy.testing.strategies import predictors
from tests.stages.reference import interval_batch, predicted, scan_budget

queues = st.lists(st.tuples(st.integers(1, 9), st.integers(0, 40)), max_size=8)


@pytest.mark.slow
@given(predictors(tiles=True), st.lists(st.integers(1, 200), max_size=4), queues, st.data())
@settings(max_examples=400)
def test_time_to_budget_equals_a_linear_scan(
    predictor: LatencyPredictor,
    decodes: list[int],
    queue: list[tuple[int, int]],
    data: st.DataObject,
) -> None:
    """Against the scan of the same prices (exact) and of explicit batches (up to ties)."""
    remaining, contexts = [r for r, _ in queue], [u for _, u in queue]
    priced = PricedQueue.of_lengths(predictor, decodes, remaining, contexts)
    limit = data.draw(st.integers(0, priced.total + 3))
    span = range(min(limit, priced.total) + 1)
    prices = [priced.price(0, b) for b in span]
    target = data.draw(st.one_of(st.sampled_from(prices), st.floats(0.0, 2 * max(prices))))
    assert fill_budget(priced, target, limit) == scan_budget(prices, target)
    explicit = [
        predicted(predictor, interval_batch(decodes, remaining, contexts, 0, b)) for b in span
    ]
    if all(abs(p - target) > 1e-9 * max(target, 1e-12) for p in explicit):
        assert fill_budget(priced, target, limit) == scan_budget(explicit, target)


@given(predictors(tiles=True), st.lists(st.integers(1, 200), max_size=4), queues, st.data())
@settings(max_examples=200)
def test_a_remembered_budget_is_the_one_searched_afresh(
    predictor: LatencyPredictor,
    decodes: list[int],
    queue: list[tuple[int, int]],
    data: st.DataObject,
) -> None:
    """`fill_budget` answers a repeated (target, limit) from `PricedQueue.budgets`: what a
    fresh queue, which remembers nothing, searches."""
    remaining, contexts = [r for r, _ in queue], [u for _, u in queue]
    priced = PricedQueue.of_lengths(predictor, decodes, remaining, contexts)
    asks = data.draw(
        st.lists(
            st.tuples(st.floats(0.0, 2 * priced.price(0, priced.total)), st.integers(0, 90)),
            min_size=1,
            max_size=6,
        )
    )
    for target, limit in asks + asks:
        fresh = PricedQueue.of_lengths(predictor, decodes, remaining, contexts)
        assert fill_budget(priced, target, limit) == fill_budget(fresh, target, limit)
    assert set(priced.budgets) == set(asks)


def test_bisection_alone_would_miss_the_answer() -> None:
    """A 1-token chunk is a decode (eq. 4): here the mixed model prices b = 3 (chunk 2 of the
    second request) below b = 2 (its 1-token chunk, decode scenario), so T̂ dips."""
    decode = LinearModel(0.0, (0, 0, 0, 0.010, 0, 0, 0))
    mixed = LinearModel(0.0, (0, 0, 0, 0.001, 0, 0.001, 0))
    predictor = LatencyPredictor(decode, mixed, mixed, fallback=mixed)
    queue = [Request("a", 0.0, 1, 0, 0, 1.0, 0.1), Request("b", 0.0, 6, 0, 0, 1.0, 0.1)]
    priced = PricedQueue.of(predictor, [], queue)
    prices = [priced.price(0, b) for b in range(priced.total + 1)]
    assert prices[2] > prices[3]
    target = prices[3]
    naive = bisect_right(range(len(prices)), target, key=prices.__getitem__) - 1
    assert naive == 0
    assert time_to_budget(predictor, [], queue, target, 7) == scan_budget(prices, target) == 3


@given(predictors(tiles=True), st.floats(0.0, 0.5))
@settings(max_examples=50)
def test_empty_queue_has_no_budget(predictor: LatencyPredictor, target: float) -> None:
    assert fill_budget(PricedQueue.of_lengths(predictor, [100, 200], [], []), target, 2048) == 0


def test_budget_never_exceeds_the_limit() -> None:
    zero = LinearModel(0.0, (0.0,) * 7)
    priced = PricedQueue.of_lengths(
        LatencyPredictor(zero, zero, zero, fallback=zero), [5], [100, 100], [0, 0]
    )
    assert fill_budget(priced, 1.0, 150) == 150
    assert fill_budget(priced, 1.0, 10_000) == 200


@pytest.mark.parametrize("target", [0.0, -1.0])
def test_infeasible_target_gives_zero(target: float) -> None:
    model = LinearModel(0.01, (0.0,) * 7)
    priced = PricedQueue.of_lengths(
        LatencyPredictor(model, model, model, fallback=model), [5], [100], [0]
    )
    assert fill_budget(priced, target, 100) == 0
