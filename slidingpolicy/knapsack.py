"""Exact 0/1 knapsack by dynamic programming over weights (eq. 19–20), lexicographic (eq. 21)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def max_count(weights: Sequence[int], capacity: int) -> int:
    """The most items whose weights fit in `capacity` (take the lightest first)."""
    total = count = 0
    for w in sorted(weights):
        total += w
        if total > capacity:
            break
        count += 1
    return count


def _usable(weights: Sequence[int], items: list[int], capacity: int) -> list[int]:
    """The items that belong to some subset of the largest count (the DP's first criterion):
    item j does iff w_j plus the m − 1 lightest other weights fits."""
    lightest = sorted(items, key=lambda i: (weights[i], i))
    m = max_count([weights[i] for i in items], capacity)
    room = capacity - sum(weights[i] for i in lightest[: m - 1])
    inner = set(lightest[:m])
    return [i for i in items if i in inner or weights[i] <= room]


def knapsack(weights: Sequence[int], values: Sequence[float], capacity: int) -> tuple[int, ...]:
    """Indices of the subset with Σ weight ≤ capacity that is lexicographically best by
    (number of items, Σ value, Σ weight) — eq. 21's order, used inside the DP too.

    dp[w] is the best (count, value) over subsets of exact weight w, packed into one float
    count·K + value with K above every reachable value sum, so one comparison per cell keeps
    the order; values closer than about 1e-12 of K are ties. Cost O(n · capacity).
    Ties keep the subset without the later item; the exact-weight table then prefers the
    largest weight among equal (count, value). Items that belong to no subset of the largest
    count are left out of the table first: they cannot be in the optimum.
    """
    if capacity < 0:
        return ()
    items = [i for i, w in enumerate(weights) if w <= capacity]
    if sum(weights[i] for i in items) <= capacity:
        return tuple(items)
    items = _usable(weights, items, capacity)
    scale = 2.0 ** np.ceil(np.log2(sum(values[i] for i in items) + 2.0))
    best = np.full(capacity + 1, -np.inf)
    best[0] = 0.0
    taken = np.zeros((len(items), capacity + 1), dtype=bool)
    for row, i in enumerate(items):
        w = weights[i]
        offer = best[: capacity + 1 - w] + (scale + values[i])
        better = offer > best[w:]
        np.maximum(best[w:], offer, out=best[w:])
        taken[row, w:] = better
    weight = int(np.flatnonzero(best == best.max())[-1])
    chosen = []
    for row in range(len(items) - 1, -1, -1):
        if taken[row, weight]:
            chosen.append(items[row])
            weight -= weights[items[row]]
    return tuple(sorted(chosen))
