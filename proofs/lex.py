"""The order of eq. 21 — (count, Σ value, Σ weight), largest first — and how an oracle judges
a choice under it when float sums of values can tie.

Values are floats, so sums of different subsets may agree to rounding: two sums within
`TIE` (relative to the sum of all values) are the same value, and then the larger weight must
win. Sums closer than `NEAR` but farther apart than `TIE` are *near-tied*: the order between
them is a matter of rounding in the implementation's packed key, so the weight is not judged.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import numpy as np

from slidingpolicy.pricing.features import FloatArray, IntArray

TIE = 1e-12
NEAR = 1e-9


@attrs.frozen(slots=True)
class Rank:
    """(|Y|, Σv, Σr) of one choice."""

    count: int
    value: float
    weight: int


@attrs.frozen(slots=True)
class Ranks:
    """Every feasible choice of a problem, as three columns."""

    count: IntArray
    value: FloatArray
    weight: IntArray

    @classmethod
    def join(cls, parts: Sequence[Ranks]) -> Ranks:
        """All choices of several problems (e.g. one per anchor)."""
        return cls(
            np.concatenate([p.count for p in parts]).astype(np.int64),
            np.concatenate([p.value for p in parts]).astype(np.float64),
            np.concatenate([p.weight for p in parts]).astype(np.int64),
        )

    def best(self, scale: float) -> Rank:
        """The lexicographic maximum, with values within TIE·scale counted as equal."""
        count = int(self.count.max())
        top = self.count == count
        value = float(self.value[top].max())
        tied = top & (self.value >= value - TIE * scale)
        return Rank(count, value, int(self.weight[tied].max()))

    def near_tied(self, scale: float) -> bool:
        """True when some choice of the best count has a value near, but not tied with, the
        best value: the weight criterion is then not judged."""
        best = self.best(scale)
        top = self.count == best.count
        gap = best.value - self.value[top]
        return bool(np.any((gap > TIE * scale) & (gap <= NEAR * scale)))


def subsets(weights: Sequence[int], values: Sequence[float], capacity: int) -> Ranks:
    """Every subset with Σ weight ≤ capacity (exhaustive; 2^n rows, n ≤ 16)."""
    n = len(weights)
    masks = ((np.arange(1 << n)[:, None] >> np.arange(n)) & 1).astype(bool)
    w = masks.astype(np.int64) @ np.asarray(weights, dtype=np.int64).reshape(n)
    v = masks.astype(np.float64) @ np.asarray(values, dtype=np.float64).reshape(n)
    keep = w <= capacity
    return Ranks(masks.sum(axis=1)[keep].astype(np.int64), v[keep], w[keep])


def judge(found: Rank, oracle: Rank, scale: float, near_tied: bool) -> str | None:
    """None when `found` is optimal by the oracle's account, else what differs.

    Count exact; value within NEAR·scale; weight exact unless the values are near-tied.
    """
    if found.count != oracle.count:
        return f"count {found.count} != optimum {oracle.count}"
    if abs(found.value - oracle.value) > NEAR * scale:
        return f"value {found.value!r} != optimum {oracle.value!r}"
    if not near_tied and found.weight != oracle.weight:
        return f"weight {found.weight} != optimum {oracle.weight} (values not near-tied)"
    return None
