"""Hypothesis strategies for small fills: a predictor, decodes and an ordered prefill queue."""

from __future__ import annotations

from collections.abc import Iterable

import attrs
from hypothesis import strategies as st

from slidingpolicy.pricing.model import LatencyPredictor
from slidingpolicy.pricing.queue import PricedQueue
from tests.strategies import predictors


def _ints(values: Iterable[int]) -> tuple[int, ...]:
    return tuple(values)


@attrs.frozen(slots=True)
class FillCase:
    """Decode contexts, and the queue's remainders r_i and contexts u_i, in queue order."""

    predictor: LatencyPredictor
    decode_contexts: tuple[int, ...] = attrs.field(converter=_ints)
    remaining: tuple[int, ...] = attrs.field(converter=_ints)
    contexts: tuple[int, ...] = attrs.field(converter=_ints)

    def fill(self) -> PricedQueue:
        """This queue, priced beside these decodes."""
        return PricedQueue.of_lengths(
            self.predictor, self.decode_contexts, self.remaining, self.contexts
        )

    @property
    def total(self) -> int:
        """Σ r_i."""
        return sum(self.remaining)


remainders = st.one_of(st.integers(1, 3), st.integers(1, 64), st.integers(1, 400))
"""Short remainders are common on purpose: 1-token requests and chunks are where T̂ jumps."""


@st.composite
def fill_cases(
    draw: st.DrawFn, max_requests: int = 6, max_decodes: int = 4, max_context: int = 3000
) -> FillCase:
    """A predictor with independent scenario models, 0–max_decodes decodes, 1–max_requests
    queued requests."""
    n = draw(st.integers(1, max_requests))
    decodes = draw(st.lists(st.integers(1, max_context), max_size=max_decodes))
    remaining = draw(st.lists(remainders, min_size=n, max_size=n))
    contexts = draw(st.lists(st.integers(0, max_context), min_size=n, max_size=n))
    return FillCase(draw(predictors(tiles=True)), decodes, remaining, contexts)


@st.composite
def targets(draw: st.DrawFn, case: FillCase, limit: int) -> float:
    """A latency target: a fraction of the largest T̂ over [0, limit], or exactly one of the
    T̂(b) (exact ties are where a search most easily goes off by one)."""
    fill = case.fill()
    prices = fill.prefix_latencies(limit)
    if draw(st.booleans()):
        return float(prices[draw(st.integers(0, limit))])
    return draw(st.floats(0.0, 1.2)) * float(prices.max())
