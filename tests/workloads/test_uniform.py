"""Uniform length tables: samples within the range, distributed as the uniform."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from slidingpolicy.workloads.uniform import uniform


@given(st.integers(1, 500), st.integers(0, 500), st.integers(1, 50), st.integers(0, 50))
def test_samples_stay_within_the_ranges(low: int, width: int, out_low: int, out_width: int) -> None:
    distribution = uniform("u", (low, low + width), (out_low, out_low + out_width))
    prompt, output = distribution.sample(500, np.random.default_rng(0))
    assert prompt.min() >= low
    assert prompt.max() <= low + width
    assert output.min() >= out_low
    assert output.max() <= out_low + out_width


def test_the_lengths_follow_the_uniform_distribution_within_a_percent() -> None:
    """Kolmogorov distance to the uniform on [32, 256]: the table's quantiles are whole
    tokens 2.24 apart, so single lengths are not equally likely, but their CDF is uniform's."""
    prompt, _ = uniform("u", (32, 256), (16, 96)).sample(200_000, np.random.default_rng(1))
    lengths = np.arange(32, 257)
    empirical = np.searchsorted(np.sort(prompt), lengths, side="right") / prompt.size
    assert np.max(np.abs(empirical - (lengths - 32 + 0.5) / 224)) < 0.01
