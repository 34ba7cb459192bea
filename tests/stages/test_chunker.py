"""SlidingChunker never defers (issue 14, defect 2; docs/decisions.md).

Eq. 9 charges nothing for work left to the next iteration, and the horizon recedes every
step, so a split may keep postponing work that fits now. Before the rule, the exact split
left part of a queue that fitted within T_cur to the next iteration, and the next
iteration did the same again.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slidingpolicy import SlidingConfig
from slidingpolicy.pricing.budget import fill_budget
from slidingpolicy.pricing.queue import PricedQueue
from slidingpolicy.stages.chunk import sliding_chunk
from slidingpolicy.testing.strategies import predictors, realistic_predictors

queues = st.lists(st.tuples(st.integers(1, 3000), st.integers(0, 4000)), min_size=1, max_size=8)


@st.composite
def chunker_cases(draw: st.DrawFn) -> tuple[PricedQueue, tuple[float, ...], int, SlidingConfig]:
    """A priced queue behind some decodes, a window horizon W_1 ≤ … ≤ W_k, a cap, a config."""
    predictor = draw(st.one_of(predictors(tiles=True), realistic_predictors()))
    decodes = draw(st.lists(st.integers(1, 4000), min_size=1, max_size=64))
    queue = draw(queues)
    priced = PricedQueue.of_lengths(
        predictor, decodes, [r for r, _ in queue], [u for _, u in queue]
    )
    window = draw(st.integers(2, 4))
    t_cur = draw(st.floats(0.0, 0.3))
    tbt = draw(st.floats(0.01, 0.3))
    horizon = tuple(t_cur + j * tbt for j in range(window))
    cap = draw(st.integers(1, 4096))
    config = SlidingConfig(window=window, split_search=draw(st.sampled_from(["exact", "ternary"])))
    return priced, horizon, cap, config


@pytest.mark.slow
@given(chunker_cases())
@settings(max_examples=400, deadline=None)
def test_a_queue_that_fits_now_runs_now(
    case: tuple[PricedQueue, tuple[float, ...], int, SlidingConfig],
) -> None:
    """When the whole queue fits in this iteration's cap and T_cur, all of it runs now."""
    priced, horizon, cap, config = case
    if priced.total > cap or priced.prefix(priced.total) > horizon[0]:
        return
    assert sliding_chunk(priced, horizon, cap, config).budget == priced.total


@pytest.mark.slow
@given(chunker_cases())
@settings(max_examples=400, deadline=None)
def test_prefill_that_fits_now_is_never_idled(
    case: tuple[PricedQueue, tuple[float, ...], int, SlidingConfig],
) -> None:
    """Some prefill runs whenever some fits within T_cur, and never more than fits."""
    priced, horizon, cap, config = case
    fits = fill_budget(priced, horizon[0], cap)
    budget = sliding_chunk(priced, horizon, cap, config).budget
    assert (budget > 0) == (fits > 0)
    assert budget <= fits
