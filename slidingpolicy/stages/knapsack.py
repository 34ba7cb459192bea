"""Exact 0/1 knapsack by dynamic programming over weights (eq. 19–20), lexicographic (eq. 21)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np

FEW_SUBSETS = 64
"""Below this many candidate subsets of the largest size, they are compared one by one."""

VALUE_TIE = 1e-12
"""Value sums closer than VALUE_TIE · max(1, Σ values) are equal (the DP's packed key resolves
about as finely)."""


def max_count(weights: Sequence[int], capacity: int) -> int:
    """The most items whose weights fit in `capacity` (take the lightest first)."""
    total = count = 0
    for w in sorted(weights):
        total += w
        if total > capacity:
            break
        count += 1
    return count


def _usable(weights: Sequence[int], items: list[int], capacity: int, m: int) -> list[int]:
    """The items that belong to some subset of `m` items that fits: item j does iff w_j plus
    the m − 1 lightest other weights fits."""
    lightest = sorted(items, key=lambda i: (weights[i], i))
    room = capacity - sum(weights[i] for i in lightest[: m - 1])
    inner = set(lightest[:m])
    return [i for i in items if i in inner or weights[i] <= room]


def _by_subsets(
    weights: Sequence[int], values: Sequence[float], capacity: int, items: list[int], m: int
) -> tuple[int, ...]:
    """The best m-subset of `items` by (Σ value, Σ weight), comparing every one: among the
    subsets whose Σ value is within VALUE_TIE of the best, the heaviest (then the most valuable).

    Sums of different subsets add their values in different orders, so two equal sums may
    differ in the last bits; they are one value, and eq. 21's weight must decide."""
    ranked = [
        (sum(values[i] for i in subset), sum(weights[i] for i in subset), subset)
        for subset in itertools.combinations(items, m)
        if sum(weights[i] for i in subset) <= capacity
    ]
    if not ranked:
        return ()
    top = max(value for value, _, _ in ranked)
    floor = top - VALUE_TIE * max(1.0, sum(values[i] for i in items))
    tied = [(weight, value, subset) for value, weight, subset in ranked if value >= floor]
    return max(tied, key=lambda t: (t[0], t[1]))[2]


def _by_table(
    weights: Sequence[int], values: Sequence[float], capacity: int, items: list[int]
) -> tuple[int, ...]:
    """The DP of eq. 20 over exact weights, lexicographic in (count, value), then weight.

    dp[w] is the best (count, value) over subsets of exact weight w, packed into one float
    count·K + value with K above every reachable value sum, so one comparison per cell keeps
    the order; values closer than about 1e-12 of K are ties. Cost O(n · capacity). Ties keep
    the subset without the later item; the exact-weight table then prefers the largest
    weight among equal (count, value): among the cells within `VALUE_TIE` of the best key, as
    two subsets of one value summed in different orders may differ in the last bits.
    """
    scale = 2.0 ** np.ceil(np.log2(sum(values[i] for i in items) + 2.0))
    best = np.full(capacity + 1, -np.inf)
    best[0] = 0.0
    taken = np.zeros((len(items), capacity + 1), dtype=bool)
    for row, i in enumerate(items):
        w = weights[i]
        offer = best[: capacity + 1 - w] + (scale + values[i])
        taken[row, w:] = offer > best[w:]
        np.maximum(best[w:], offer, out=best[w:])
    top = float(best.max())
    weight = int(np.flatnonzero(best >= top - VALUE_TIE * top)[-1])
    chosen = []
    for row in range(len(items) - 1, -1, -1):
        if taken[row, weight]:
            chosen.append(items[row])
            weight -= weights[items[row]]
    return tuple(chosen)


def knapsack(weights: Sequence[int], values: Sequence[float], capacity: int) -> tuple[int, ...]:
    """Indices (ascending) of the subset with Σ weight ≤ capacity that is lexicographically
    best by (number of items, Σ value, Σ weight) — eq. 21's order, used inside the DP too.

    The largest count m is known in advance (lightest first), and only items that belong
    to some fitting m-subset can be in the optimum. When everything fits, or when those
    items leave at most FEW_SUBSETS m-subsets, the subsets are compared directly; otherwise
    the DP decides. Both are exact; values within about 1e-12 relative are ties.
    """
    if capacity < 0:
        return ()
    items = [i for i, w in enumerate(weights) if w <= capacity]
    if sum(weights[i] for i in items) <= capacity:
        return tuple(items)
    m = max_count([weights[i] for i in items], capacity)
    items = _usable(weights, items, capacity, m)
    if math.comb(len(items), m) <= FEW_SUBSETS:
        return tuple(sorted(_by_subsets(weights, values, capacity, items, m)))
    return tuple(sorted(_by_table(weights, values, capacity, items)))
