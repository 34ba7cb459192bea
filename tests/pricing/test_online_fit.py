"""The online refit (`fit.solve` with a prior): what the data explain follows the data, what
they leave open keeps the offline predictor scaled to them (issue 14, defect 5)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slidingpolicy import LatencyPredictor, LinearModel
from slidingpolicy.pricing.fit import prior_scale, solve
from slidingpolicy.pricing.samples import PredictorStats, Sample, accumulate
from slidingpolicy.testing.strategies import linear_models

batches = st.lists(
    st.tuples(st.one_of(st.just(1), st.integers(2, 2048)), st.integers(0, 8000)),
    min_size=1,
    max_size=12,
)


@st.composite
def ordered_predictors(draw: st.DrawFn) -> LatencyPredictor:
    """A predictor in the fit's monotone order: DECODE without x3, MIXED ≥ DECODE,
    PREFILL ≤ MIXED (what `solve` returns, so a refit can reproduce it)."""
    decode, extra, below = (draw(linear_models()) for _ in range(3))
    decode_weights = tuple(0.0 if j == 2 else w for j, w in enumerate(decode.weights))
    decode = LinearModel(decode.intercept, decode_weights)
    mixed = LinearModel(
        decode.intercept + extra.intercept,
        tuple(a + b for a, b in zip(decode_weights, extra.weights, strict=True)),
    )
    prefill = LinearModel(
        min(below.intercept, mixed.intercept),
        tuple(min(a, b) for a, b in zip(below.weights, mixed.weights, strict=True)),
    )
    return LatencyPredictor(decode, prefill, mixed, fallback=mixed, margin=1.07)


def _samples(truth: LatencyPredictor, drawn: list[list[tuple[int, int]]]) -> list[Sample]:
    samples = []
    for batch in drawn:
        chunks, contexts = [c for c, _ in batch], [u for _, u in batch]
        latency = truth.predict(np.array(chunks), np.array(contexts))
        samples.append(Sample(chunks, contexts, latency))
    return samples


def _predictions(predictor: LatencyPredictor, drawn: list[list[tuple[int, int]]]) -> list[float]:
    return [
        predictor.predict(np.array([c for c, _ in b]), np.array([u for _, u in b])) for b in drawn
    ]


@given(ordered_predictors(), st.floats(0.25, 4.0), st.lists(batches, max_size=60), batches)
@settings(max_examples=150, deadline=None)
def test_latencies_a_scaled_prior_explains_are_refit_to_that_scaled_prior(
    prior: LatencyPredictor,
    factor: float,
    observed: list[list[tuple[int, int]]],
    probe: list[tuple[int, int]],
) -> None:
    """On a machine `factor` times as slow as calibrated, the refit predicts `factor` × the
    prior on every batch, seen or not, however few batches it saw, with the prior's margin;
    and the prior itself when what it saw carries no scale (no batch, or only batches the
    prior prices at 0, where every factor explains the data)."""
    truth = prior.scaled(factor)
    refit = solve(accumulate(_samples(truth, observed)), prior=prior, prior_weight=200.0)
    assert refit.margin == prior.margin
    informative = any(p > 0.0 for p in _predictions(prior, observed))
    expected = truth if informative else prior
    for got, want in zip(
        _predictions(refit, [*observed, probe]),
        _predictions(expected, [*observed, probe]),
        strict=True,
    ):
        assert got == pytest.approx(want, rel=1e-6, abs=1e-9)


@given(ordered_predictors(), st.floats(0.25, 4.0), st.lists(batches, min_size=1, max_size=40))
@settings(max_examples=100, deadline=None)
def test_prior_scale_is_the_least_squares_factor(
    prior: LatencyPredictor, factor: float, observed: list[list[tuple[int, int]]]
) -> None:
    truth = prior.scaled(factor)
    stats = accumulate(_samples(truth, observed))
    predicted = _predictions(prior, observed)
    if max(predicted) > 1e-9:
        assert prior_scale(stats, prior) == pytest.approx(factor, rel=1e-9)
    elif not any(predicted):
        assert prior_scale(stats, prior) == 1.0
    assert prior_scale(PredictorStats.empty(), prior) == 1.0
