"""Measured noise: ratios kept by class of fitted latency, every step in its own class, and
drawn from the engine's seeded normals with each class's measured distribution."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slidingpolicy.engine.noise import Normals, engine_rng
from slidingpolicy.errors import InvalidRecordError
from slidingpolicy.hardware.ratio_noise import MIN_BIN_STEPS, NOISE_BINS, RatioNoise

fitted_latency = st.sampled_from([0.01, 0.02, 0.05]) | st.floats(1e-4, 2.0)
steps = st.lists(st.tuples(fitted_latency, st.floats(0.5, 3.0)), min_size=1, max_size=900)


@settings(deadline=None)
@given(steps)
def test_every_step_is_in_the_class_of_its_fitted_latency(pairs: list[tuple[float, float]]) -> None:
    """Classes are ordered, at most NOISE_BINS, each of at least MIN_BIN_STEPS steps unless
    there is one, and each holds exactly the ratios of the steps its edges take in — ties of
    fitted latency included."""
    fitted = [f for f, _ in pairs]
    ratios = [r for _, r in pairs]
    noise = RatioNoise.measured(fitted, [f * r for f, r in pairs])
    assert len(noise.bins) <= NOISE_BINS
    assert list(noise.edges) == sorted(set(noise.edges))
    if len(noise.bins) > 1:
        assert min(b.size for b in noise.bins) >= MIN_BIN_STEPS
    for k, found in enumerate(noise.bins):
        low = noise.edges[k - 1] if k else -math.inf
        high = noise.edges[k] if k < len(noise.edges) else math.inf
        inside = [f * r / f for f, r in zip(fitted, ratios, strict=True) if low <= f < high]
        assert found.tolist() == pytest.approx(sorted(inside))


def test_enough_steps_fill_every_class() -> None:
    rng = np.random.default_rng(0)
    fitted = rng.uniform(0.01, 1.0, NOISE_BINS * MIN_BIN_STEPS * 3)
    noise = RatioNoise.measured(fitted, fitted * rng.lognormal(0.0, 0.3, fitted.size))
    assert len(noise.bins) == NOISE_BINS
    assert max(b.size for b in noise.bins) - min(b.size for b in noise.bins) <= 1


@settings(deadline=None)
@given(steps, st.floats(-8.0, 8.0), st.floats(-8.0, 8.0), st.floats(0.0, 3.0))
def test_a_draw_is_deterministic_non_decreasing_in_z_and_within_its_class(
    pairs: list[tuple[float, float]], a: float, b: float, latency: float
) -> None:
    noise = RatioNoise.measured([f for f, _ in pairs], [f * r for f, r in pairs])
    low, high = sorted((a, b))
    assert noise.factor(latency, low) == noise.factor(latency, low)
    assert noise.factor(latency, low) <= noise.factor(latency, high)
    inside = noise.bins[int(np.searchsorted(noise.edges, latency, side="right"))]
    assert inside[0] <= noise.factor(latency, a) <= inside[-1]


def test_the_engines_normals_draw_each_class_with_its_measured_distribution() -> None:
    """Drawn through Φ(z), 20 000 of the engine's standard normals give each class's
    distribution: the largest gap between the two distribution functions (Kolmogorov-Smirnov)
    is within 1.63/√n (the 1% level) plus one step of the measured one; the same seed draws
    the same ratios."""
    rng = np.random.default_rng(1)
    fitted = rng.uniform(0.01, 1.0, 2000)
    noise = RatioNoise.measured(fitted, fitted * rng.lognormal(0.0, 0.2 + fitted, fitted.size))
    for k, ratios in enumerate(noise.bins):
        latency = noise.edges[k] - 1e-9 if k < len(noise.edges) else 2.0
        normals = Normals(engine_rng(5))
        drawn = np.sort([noise.factor(latency, normals.take()) for _ in range(20_000)])
        grid = np.quantile(ratios, np.linspace(0.01, 0.99, 99))
        gap = np.abs(
            np.searchsorted(drawn, grid, side="right") / drawn.size
            - np.searchsorted(ratios, grid, side="right") / ratios.size
        )
        assert gap.max() < 1.63 / math.sqrt(drawn.size) + 1 / ratios.size
        again = Normals(engine_rng(5))
        first = [noise.factor(latency, again.take()) for _ in range(50)]
        normals = Normals(engine_rng(5))
        assert first == [noise.factor(latency, normals.take()) for _ in range(50)]
    wide, narrow = (float(np.std(np.log(b))) for b in (noise.bins[-1], noise.bins[0]))
    assert wide > 2 * narrow, "the classes keep the spread that grows with the step"


@pytest.mark.parametrize(
    ("edges", "bins", "field"),
    [
        ((), [[]], "bins[0]"),
        ((), [[0.0, 1.0]], "bins[0]"),
        ((), [[1.0, math.nan]], "bins[0]"),
        ((), [[-1.0, 1.0]], "bins[0]"),
        ((0.1,), [[1.0]], "bins"),
        ((0.2, 0.1), [[1.0], [1.0], [1.0]], "edges"),
        ((0.1, 0.1), [[1.0], [1.0], [1.0]], "edges"),
    ],
)
def test_bad_noise_is_refused(
    edges: tuple[float, ...], bins: list[list[float]], field: str
) -> None:
    with pytest.raises(InvalidRecordError, match=re.escape(f"ratio noise: {field} ")):
        RatioNoise(edges, bins)


def test_no_step_above_zero_is_refused() -> None:
    with pytest.raises(InvalidRecordError, match="no step with a latency above zero"):
        RatioNoise.measured([0.0, 0.1], [0.1, 0.0])
