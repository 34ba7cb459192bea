"""Nearest-rank percentiles: of values each counted once or a number of times, and of two
such sets merged without building the concatenation."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

PERCENTILES = (50, 90, 99)


def percentile(values: FloatArray, q: float, weights: IntArray | None = None) -> float:
    """Nearest-rank q-th percentile of `values` (each counted `weights` times); NaN if empty."""
    return percentiles(values, (q,), weights)[0]


def percentiles(
    values: FloatArray, qs: Sequence[float], weights: IntArray | None = None
) -> list[float]:
    """`percentile` at each of `qs`, sorting once."""
    if values.size == 0:
        return [math.nan] * len(qs)
    counts = np.ones(values.size, dtype=np.int64) if weights is None else weights
    order = np.argsort(values, kind="stable")
    cumulative = np.cumsum(counts[order])
    total = int(cumulative[-1])
    if total == 0:
        return [math.nan] * len(qs)
    ordered = values[order]
    result = []
    for q in qs:
        rank = max(1, math.ceil(q * total / 100))
        result.append(float(ordered[int(np.searchsorted(cumulative, rank))]))
    return result


def merged_percentiles(
    plain: FloatArray, values: FloatArray, weights: IntArray, qs: Sequence[float]
) -> list[float]:
    """`percentiles` at `qs` of `plain` (each counted once) with `values` (each counted
    `weights` times), equal to `percentiles` of their concatenation; sorts `plain` in place,
    which may hold tens of millions of values, and builds no array as long."""
    plain.sort()
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    cumulative = np.cumsum(weights[order])
    total = plain.size + (int(cumulative[-1]) if cumulative.size else 0)
    if total == 0:
        return [math.nan] * len(qs)

    def below(v: float, of: FloatArray) -> int:
        """How many of sorted `of` are ≤ v."""
        return int(np.searchsorted(of, v, side="right"))

    def weight_to(v: float) -> int:
        """The weight of `values` ≤ v."""
        k = below(v, ordered)
        return int(cumulative[k - 1]) if k else 0

    def plain_reach(i: int) -> int:
        """How many values are ≤ plain[i], counting plain[: i + 1] only (a lower bound)."""
        return i + 1 + weight_to(float(plain[i]))

    def weighted_reach(i: int) -> int:
        """How many values are ≤ ordered[i], counting ordered[: i + 1] only."""
        return below(float(ordered[i]), plain) + int(cumulative[i])

    result = []
    for q in qs:
        rank = max(1, math.ceil(q * total / 100))
        found = math.inf
        j = _first(plain.size, plain_reach, rank)
        if j < plain.size:
            found = float(plain[j])
        k = _first(ordered.size, weighted_reach, rank)
        if k < ordered.size:
            found = min(found, float(ordered[k]))
        result.append(found)
    return result


def _first(n: int, reach: Callable[[int], int], rank: int) -> int:
    """The least i < n with reach(i) ≥ rank, for `reach` non-decreasing; n if none."""
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi) // 2
        if reach(mid) >= rank:
            hi = mid
        else:
            lo = mid + 1
    return lo
