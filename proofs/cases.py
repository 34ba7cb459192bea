"""Hypothesis strategies for small fills: a predictor, decodes and an ordered prefill queue."""

from __future__ import annotations

from collections.abc import Iterable

import attrs
from hypothesis import strategies as st

from slidingpolicy.pricing.model import LatencyPredictor, LinearModel
from slidingpolicy.pricing.queue import PricedQueue
from slidingpolicy.testing.strategies import predictors


def _ints(values: Iterable[int]) -> tuple[int, ...]:
    return tuple(values)


@attrs.frozen(slots=True)
class FillCase:
    """Decode contexts, and the queue's remainders r_i and contexts u_i, in queue order."""

    predictor: LatencyPredictor
    decode_contexts: tuple[int, ...] = attrs.field(converter=_ints)
    remaining: tuple[int, ...] = attrs.field(converter=_ints)
    contexts: tuple[int, ...] = attrs.field(converter=_ints)

    def priced(self) -> PricedQueue:
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
    priced = case.priced()
    prices = priced.prefix_latencies(limit)
    if draw(st.booleans()):
        return float(prices[draw(st.integers(0, limit))])
    return draw(st.floats(0.0, 1.2)) * float(prices.max())


GRID = (1e-10, 1e-9, 1e-8, 1e-5, 1e-8, 1e-5, 1e-6, 1e-4)
"""Steps of the weights x1..x8 of `grid_predictors`: all multiples of 1e-10 s."""


@st.composite
def grid_linear_models(draw: st.DrawFn, tiled: bool) -> LinearModel:
    """A model whose intercept and weights are whole multiples of 1e-10 s: two costs of
    eq. 6 are then equal in exact arithmetic or at least 1e-10 s apart, far beyond
    rounding, so a cost within `split.TIE` of another is a real tie."""
    steps = GRID if tiled else GRID[:7]
    weights = tuple(draw(st.integers(0, 30)) * step for step in steps)
    return LinearModel(draw(st.integers(0, 200)) * 1e-4, weights)


@st.composite
def repeated_fill_cases(draw: st.DrawFn) -> FillCase:
    """A queue of up to three runs of alike requests (a burst of one prompt length), each of
    1–8 requests (where `split.repeated_pieces` skips pieces)."""
    runs = draw(
        st.lists(
            st.tuples(remainders, st.integers(0, 300), st.integers(1, 8)), min_size=1, max_size=3
        )
    )
    remaining = [r for r, _, n in runs for _ in range(n)]
    contexts = [u for _, u, n in runs for _ in range(n)]
    decodes = draw(st.lists(st.integers(1, 3000), max_size=4))
    return FillCase(draw(predictors()), decodes, remaining, contexts)


@st.composite
def grid_fill_cases(draw: st.DrawFn) -> FillCase:
    """`fill_cases` or `repeated_fill_cases` under a predictor of grid weights
    (`grid_linear_models`)."""
    case = draw(st.one_of(fill_cases(), repeated_fill_cases()))
    tile = draw(st.sampled_from([None, None, 2, 5, 16, 128]))
    models = [draw(grid_linear_models(tiled=tile is not None)) for _ in range(4)]
    decode, prefill, mixed, fallback = models
    predictor = LatencyPredictor(decode, prefill, mixed, fallback=fallback, tile=tile)
    return attrs.evolve(case, predictor=predictor)
