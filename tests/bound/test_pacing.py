"""Pacing: the heaviest chain of disjoint windows is the optimum (against brute force), the
chains share no request, and the long-run iteration rate behaves."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from slidingpolicy.bound.pacing import chain_weights, iteration_rate, longest_spacings

windows = st.lists(
    st.tuples(st.floats(0.0, 20.0), st.floats(0.1, 8.0), st.integers(1, 40)), min_size=1, max_size=9
)


def _brute(starts: np.ndarray, ends: np.ndarray, tokens: np.ndarray) -> float:
    best = 0.0
    for r in range(1, starts.size + 1):
        for chosen in itertools.combinations(range(starts.size), r):
            spans = sorted((starts[i], ends[i]) for i in chosen)
            if all(a[1] <= b[0] for a, b in itertools.pairwise(spans)):
                best = max(best, float(tokens[list(chosen)].sum()))
    return best


@settings(max_examples=200, deadline=None)
@given(windows)
def test_the_heaviest_chain_is_the_best_set_of_disjoint_windows(
    spans: list[tuple[float, float, int]],
) -> None:
    starts = np.array([s for s, _, _ in spans])
    ends = starts + np.array([w for _, w, _ in spans])
    tokens = np.array([float(k) for _, _, k in spans])
    assert chain_weights(starts, ends, tokens, 1)[0] == _brute(starts, ends, tokens)


@settings(max_examples=100, deadline=None)
@given(windows, st.integers(1, 5))
def test_successive_chains_share_no_request_and_get_lighter(
    spans: list[tuple[float, float, int]], count: int
) -> None:
    starts = np.array([s for s, _, _ in spans])
    ends = starts + np.array([w for _, w, _ in spans])
    tokens = np.array([float(k) for _, _, k in spans])
    weights = chain_weights(starts, ends, tokens, count)
    assert len(weights) <= count
    assert sum(weights) <= tokens.sum()
    assert all(a >= b for a, b in itertools.pairwise(weights))


def test_longest_spacings_share() -> None:
    """The longest fraction f of exponential spacings hold f(1 + ln 1/f) of the time."""
    rng = np.random.default_rng(0)
    gaps = np.sort(rng.exponential(1.0, 1_000_000))[::-1]
    for f in (0.01, 0.05, 0.2):
        top = gaps[: int(f * gaps.size)].sum() / gaps.sum()
        assert abs(top - float(longest_spacings(np.array([f]))[0])) < 0.005
    assert float(longest_spacings(np.array([2.0]))[0]) == 1.0


def test_the_rate_floor_is_below_every_windows_density_and_rises_with_load() -> None:
    tokens = np.array([100.0, 400.0, 1000.0])
    window = 3.0 + (tokens - 1.0) * 0.1
    mass = np.array([0.3, 0.4, 0.3])
    low = iteration_rate(tokens, window, mass, 0.5, 0.01)
    high = iteration_rate(tokens, window, mass, 5.0, 0.01)
    assert 0.0 <= low <= high <= float((tokens / window).max())
    assert iteration_rate(tokens, window, mass, 0.0, 0.01) == 0.0
