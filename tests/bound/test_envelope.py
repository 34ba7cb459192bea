"""The convex envelope lies below every sample, is convex and non-decreasing, and its
perspective is below any way of splitting work over that many iterations (Jensen)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from slidingpolicy.bound.envelope import ConvexCost

samples = st.lists(st.floats(0.0, 10.0), min_size=1, max_size=200).map(
    lambda v: np.cumsum(np.array(v)) * np.where(np.arange(len(v)) % 7 == 3, 0.8, 1.0)
)
"""Rising sequences with dips (every seventh sample 20% low): a staircase like a measured
profile's."""


@settings(max_examples=200, deadline=None)
@given(samples)
def test_envelope_is_below_every_sample(values: np.ndarray) -> None:
    envelope = ConvexCost.below(values)
    x = np.arange(1, values.size + 1, dtype=np.float64)
    assert np.all(envelope(x) <= values)


@settings(max_examples=200, deadline=None)
@given(samples)
def test_envelope_is_convex_and_non_decreasing(values: np.ndarray) -> None:
    envelope = ConvexCost.below(values)
    assert np.all(np.diff(envelope.values) >= 0)
    assert np.all(np.diff(envelope.slopes) >= -1e-12 * max(1.0, float(values.max())))


@settings(max_examples=200, deadline=None)
@given(samples)
def test_envelope_touches_the_samples_at_its_corners(values: np.ndarray) -> None:
    """The largest convex function below: at each breakpoint it meets the lowest sample at or
    above that count (within its rounding margin)."""
    envelope = ConvexCost.below(values)
    rising = np.minimum.accumulate(values[::-1])[::-1]
    at = envelope.points.astype(int) - 1
    assert np.allclose(envelope.values, rising[at], rtol=1e-8, atol=1e-12)


@settings(max_examples=200, deadline=None)
@given(samples, st.lists(st.integers(1, 200), min_size=1, max_size=12))
def test_perspective_is_below_every_split(values: np.ndarray, sizes: list[int]) -> None:
    """K iterations of sizes x_1..x_K take Σ f(x_k) ≥ K · f(Σx / K) ≥ the perspective."""
    envelope = ConvexCost.below(values)
    sizes = [min(s, values.size) for s in sizes]
    spent = float(np.sum(values[np.array(sizes) - 1]))
    least = envelope.perspective(np.array([float(sum(sizes))]), np.array([float(len(sizes))]))
    assert least[0] <= spent * (1 + 1e-12)
