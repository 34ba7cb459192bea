"""fit_predictor solves the non-negative least squares of each scenario (§4.1)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from proofs.fit_oracle import design, least_squares, rss
from slidingpolicy.predictor.features import SCENARIOS
from slidingpolicy.predictor.fit import Sample, fit_predictor

FIT_CASES = 60
RELATIVE = 1e-7
"""Accepted excess of the fit's residual over cvxpy's, relative to Σ y² of the scenario."""


@st.composite
def batches(draw: st.DrawFn) -> tuple[list[int], list[int]]:
    """1–6 requests: decodes (chunk 1) and prefill chunks up to 512, contexts up to 4000."""
    n = draw(st.integers(1, 6))
    chunks = draw(st.lists(st.one_of(st.just(1), st.integers(2, 512)), min_size=n, max_size=n))
    return chunks, draw(st.lists(st.integers(0, 4000), min_size=n, max_size=n))


@st.composite
def sample_sets(draw: st.DrawFn) -> list[Sample]:
    """10–80 samples from a linear truth whose weights may be negative (so that the
    constraints bind), plus noise; latencies clipped at 0."""
    truth = np.array(draw(st.lists(st.floats(-1.0, 1.0), min_size=8, max_size=8)))
    scale = np.array([1e-3, 1e-9, 1e-8, 1e-7, 1e-4, 1e-7, 2e-4, 1e-5])
    noise = draw(st.floats(0.0, 0.3))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    samples = []
    for _ in range(draw(st.integers(10, 80))):
        chunks, contexts = draw(batches())
        sample = Sample(chunks, contexts, 0.0)
        x = np.concatenate(([1.0], sample.features()[0]))
        clean = float(x @ (truth * scale))
        latency = max(0.0, clean + noise * abs(clean) * float(rng.standard_normal()))
        samples.append(Sample(chunks, contexts, latency))
    return samples


@settings(max_examples=FIT_CASES, deadline=None)
@given(sample_sets())
def test_nnls_fit_matches_cvxpy_constrained_least_squares(samples: list[Sample]) -> None:
    """60 generated sample sets: per scenario (and for the global fallback model), the fit's
    residual sum of squares is at most cvxpy's optimum + 1e-7·Σy² — weights may differ
    where the optimum is not unique."""
    predictor = fit_predictor(samples, min_samples=1)
    groups: dict[str, list[Sample]] = {name: [] for name in SCENARIOS}
    for s in samples:
        groups[SCENARIOS[s.features()[1]]].append(s)
    checks = [(predictor.models[k], groups[name]) for k, name in enumerate(SCENARIOS)]
    checks.append((predictor.fallback, samples))
    for model, group in checks:
        if not group:
            continue
        rows, y = design(group)
        found, best = rss(model, rows, y), least_squares(rows, y)
        assert found <= best + RELATIVE * float(y @ y), (found, best)
