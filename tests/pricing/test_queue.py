"""Pricing fills: prefix-sum prices equal the predictor on explicitly built batches."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slidingpolicy import LatencyPredictor
from slidingpolicy.pricing.queue import PricedQueue
from slidingpolicy.stages.assemble import greedy_fill
from slidingpolicy.testing.strategies import predictors
from tests.stages.reference import interval_batch, predicted

queues = st.lists(st.tuples(st.integers(1, 12), st.integers(0, 40)), max_size=8)
decode_sets = st.lists(st.integers(1, 200), max_size=6)


@pytest.mark.slow
@given(predictors(tiles=True), decode_sets, queues, st.data())
@settings(max_examples=300)
def test_price_of_any_interval_equals_the_predictor_on_that_batch(
    predictor: LatencyPredictor,
    decodes: list[int],
    queue: list[tuple[int, int]],
    data: st.DataObject,
) -> None:
    remaining, contexts = [r for r, _ in queue], [u for _, u in queue]
    priced = PricedQueue.of_lengths(predictor, decodes, remaining, contexts)
    lo = data.draw(st.integers(0, priced.total))
    hi = data.draw(st.integers(lo, priced.total))
    step = data.draw(st.integers(0, 3))
    expected = predicted(predictor, interval_batch(decodes, remaining, contexts, lo, hi, step))
    assert priced.price(lo, hi, step) == pytest.approx(expected, rel=1e-12, abs=1e-15)
    vector = priced.latencies(np.array([lo]), np.array([hi]), step)
    assert vector[0] == pytest.approx(expected, rel=1e-12, abs=1e-15)


@pytest.mark.slow
@given(predictors(tiles=True), decode_sets, queues, st.data())
@settings(max_examples=200)
def test_piece_closed_forms_equal_the_price(
    predictor: LatencyPredictor,
    decodes: list[int],
    queue: list[tuple[int, int]],
    data: st.DataObject,
) -> None:
    remaining, contexts = [r for r, _ in queue], [u for _, u in queue]
    priced = PricedQueue.of_lengths(predictor, decodes, remaining, contexts)
    pieces = [k for k, r in enumerate(remaining) if r >= 2]
    if not pieces:
        return
    k = data.draw(st.sampled_from(pieces))
    c = data.draw(st.integers(2, remaining[k]))
    b = priced.starts[k] + c
    assert priced.closing_chunk(k)(c) == pytest.approx(priced.price(0, b), rel=1e-12, abs=1e-15)
    end = data.draw(st.integers(b, priced.total))
    then, whole, _ = priced.next_head(k, end)
    if whole - c >= 2:
        expected = priced.price(b, end, 1)
        assert then(whole - c) == pytest.approx(expected, rel=1e-12, abs=1e-15)


@pytest.mark.slow
@given(predictors(tiles=True), decode_sets, queues, st.data())
@settings(max_examples=300)
def test_head_price_is_the_price_of_the_next_iteration_exactly(
    predictor: LatencyPredictor,
    decodes: list[int],
    queue: list[tuple[int, int]],
    data: st.DataObject,
) -> None:
    """`head_price` from `next_head` is `price(b, end, 1)`, float for float, for every b in
    request k (h = 0..whole tokens of it left to the next iteration)."""
    remaining, contexts = [r for r, _ in queue], [u for _, u in queue]
    priced = PricedQueue.of_lengths(predictor, decodes, remaining, contexts)
    if not remaining:
        return
    k = data.draw(st.integers(0, len(remaining) - 1))
    end = data.draw(st.integers(priced.starts[k] + 1, priced.total))
    _, whole, rest = priced.next_head(k, end)
    for h in range(whole + 1):
        b = priced.starts[k] + whole - h
        assert priced.head_price(rest, k, whole, h) == priced.price(b, end, 1)


@given(st.lists(st.integers(1, 50), max_size=10), st.integers(0, 300))
def test_greedy_fill_gives_each_request_what_is_left(remaining: list[int], budget: int) -> None:
    chunks = greedy_fill(remaining, budget)
    assert sum(chunks) == min(budget, sum(remaining))
    assert all(0 < c <= r for c, r in zip(chunks, remaining, strict=False))
    assert all(c == r for c, r in zip(chunks[:-1], remaining, strict=False))
