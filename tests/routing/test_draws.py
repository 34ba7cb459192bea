"""The draws a router makes are functions of (seed, decision): two distinct indices in range,
every ordered pair about equally often."""

from __future__ import annotations

from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from slidingpolicy.routing.draws import two_of


@given(seed=st.integers(0, 2**64), decision=st.integers(0, 2**40), n=st.integers(2, 64))
def test_two_draws_are_distinct_and_in_range(seed: int, decision: int, n: int) -> None:
    first, second = two_of(seed, decision, n)
    assert 0 <= first < n
    assert 0 <= second < n
    assert first != second
    assert two_of(seed, decision, n) == (first, second)


def test_every_ordered_pair_comes_about_equally_often() -> None:
    n, draws = 4, 12_000
    counts = Counter(two_of(3, d, n) for d in range(draws))
    assert len(counts) == n * (n - 1)
    expected = draws / (n * (n - 1))
    assert all(abs(c - expected) < 0.15 * expected for c in counts.values())
