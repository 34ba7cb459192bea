"""The window split of eq. 9: B* = argmin_b T̂₁(b) + T̂₂(B_Σ − b), exact or by ternary search."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from slidingpolicy.pricing.budget import fill_budget, largest_within
from slidingpolicy.pricing.queue import Piece, PricedQueue, TiledPiece


def two_step_cost(fill: PricedQueue, b: int, budget_sum: int) -> float:
    """T̂₁(b) + T̂₂(B_Σ − b): this iteration runs stream [0, b), the next one [b, B_Σ)."""
    return fill.prefix(b) + fill.price(b, budget_sum, 1)


def _convex_candidates(now: Piece, then: Piece, whole: int, lo: int, hi: int) -> set[int]:
    """Points of [lo, hi] among which c ↦ now(c) + then(whole − c) attains its minimum.

    The sum is convex and quadratic between its two kinks (c = now.peak, c = whole −
    then.peak), so its minimum lies at an end, a kink, or the floor or ceiling of the vertex
    of the quadratic on some region.
    """
    points = {lo, hi, now.peak, now.peak + 1, whole - then.peak, whole - then.peak - 1}
    curve = now.curve + then.curve
    if curve > 0.0:
        base_slope = now.slope - then.slope - 2.0 * then.curve * whole
        for rising in (0.0, now.peak_weight):
            for falling in (0.0, then.peak_weight):
                vertex = -(base_slope + rising - falling) / (2.0 * curve)
                if lo - 1 <= vertex <= hi + 1:
                    points.update((math.floor(vertex), math.ceil(vertex)))
    return {c for c in points if lo <= c <= hi}


def _tile_spans(now: Piece, then: Piece, whole: int, lo: int, hi: int) -> list[tuple[int, int]]:
    """[lo, hi] cut where a tile count steps: now's ⌈(B₁ + c)/T⌉ between c and c + 1 when
    (B₁ + c) % T = 0, then's ⌈(B₂ + whole − c)/T⌉ between c − 1 and c when
    (B₂ + whole − c) % T = 0. Inside each span both steps are constant, so the cost is the
    smooth pieces' convex sum there. One span without a tile-aware predictor."""
    if hi < lo:
        return []
    if not isinstance(now, TiledPiece) or not isinstance(then, TiledPiece):
        return [(lo, hi)]
    tile = now.tile
    cuts = set(range(lo + (-(now.tile_base + lo)) % tile, hi, tile))
    first = lo + 1 + (then.tile_base + whole - lo - 1) % tile
    cuts.update(c - 1 for c in range(first, hi + 1, tile))
    spans, start = [], lo
    for cut in sorted(cuts):
        spans.append((start, cut))
        start = cut + 1
    spans.append((start, hi))
    return spans


def exact_split(fill: PricedQueue, budget_sum: int, cap: int, deadline: float) -> int:
    """The b in [B_Σ − cap, min(B_Σ, cap)] with T̂₁(b) ≤ deadline minimizing two_step_cost.

    Two iterations run at most 2·cap tokens, so B_Σ is taken as min(B_Σ, 2·cap).

    No feasible b exceeds TimeToBudget(deadline), which bounds the pieces searched. Per
    piece the cost is convex in the chunk away from 1-token chunks (proofs/split.md), so
    each piece contributes a few candidates priced by its closed forms, and its special
    points (a 1-token chunk in either iteration, or nothing left for the next) priced in
    full where no closed form covers them. Ties go to the larger b. When no b in range meets
    the deadline, the largest feasible b below the range is returned (the receding-horizon
    clamp).
    """
    budget_sum = min(budget_sum, 2 * cap)
    lo_b = max(0, budget_sum - cap)
    hi_b = min(budget_sum, fill_budget(fill, deadline, cap))
    best, best_cost = -1, math.inf

    def consider(b: int, cost: float) -> None:
        nonlocal best, best_cost
        if cost < best_cost or (cost == best_cost and b > best):
            best, best_cost = b, cost

    if lo_b == 0:
        consider(0, two_step_cost(fill, 0, budget_sum))
    cum = fill.starts
    first_piece = fill.request_at(max(lo_b, 1))
    for k in range(first_piece, fill.request_at(hi_b) + 1 if hi_b > lo_b else first_piece):
        c_lo, c_hi = max(1, lo_b - cum[k]), min(fill.remaining[k], hi_b - cum[k])
        now = fill.closing_chunk(k)
        then, whole = fill.next_head(k, budget_sum)
        top = _feasible_top(fill, k, now, max(2, c_lo), c_hi, deadline)
        if c_lo == 1 and (one := fill.prefix(cum[k] + 1)) <= deadline:
            left = whole - 1
            then_cost = then(left) if left >= 2 else fill.price(cum[k] + 1, budget_sum, 1)
            consider(cum[k] + 1, one + then_cost)
        for c in (whole - 1, whole):
            if max(2, c_lo) <= c <= top:
                consider(cum[k] + c, now(c) + fill.price(cum[k] + c, budget_sum, 1))
        lo, hi = max(2, c_lo), min(top, whole - 2)
        for a, b in _tile_spans(now, then, whole, lo, hi):
            for c in _convex_candidates(now.smooth(), then.smooth(), whole, a, b):
                consider(cum[k] + c, now(c) + then(whole - c))
    return best if best >= 0 else fill_budget(fill, deadline, lo_b)


def _feasible_top(fill: PricedQueue, k: int, now: Piece, lo: int, hi: int, deadline: float) -> int:
    """The largest chunk c in [lo, hi] of piece k with T̂₁ ≤ deadline (lo − 1 if none): T̂₁
    increases with c ≥ 2, so bisect the closed form, then settle ties with the exact price."""
    if hi < lo or now(hi) <= deadline:
        return hi
    top = largest_within(now, lo, hi, deadline)
    base = fill.starts[k]
    while top >= lo and fill.prefix(base + top) > deadline:
        top -= 1
    while top < hi and fill.prefix(base + top + 1) <= deadline:
        top += 1
    return top


def ternary_split(fill: PricedQueue, budget_sum: int, cap: int, deadline: float) -> int:
    """The paper's search (Alg. 1 line 4): integer ternary search of two_step_cost over the
    range, then clamped to the largest b at or below it that meets the deadline.

    Exact only where the cost is unimodal over the whole range (proofs/split.md).
    """
    budget_sum = min(budget_sum, 2 * cap)
    lo, hi = max(0, budget_sum - cap), min(budget_sum, cap)
    cost: Callable[[int], float] = lambda b: two_step_cost(fill, b, budget_sum)  # noqa: E731
    while hi - lo > 2:
        third = (hi - lo) // 3
        if cost(lo + third) > cost(hi - third):
            lo = lo + third + 1
        else:
            hi = hi - third
    best = min(range(lo, hi + 1), key=lambda b: (cost(b), -b))
    if best == 0 or fill.prefix(best) <= deadline:
        return best
    return fill_budget(fill, deadline, best)


def window_split(fill: PricedQueue, budget_sum: int, cap: int, deadline: float, window: int) -> int:
    """Window k > 2 (§10.5, direction 1): b minimizing T̂₁(b) plus the k − 1 later iterations
    sharing B_Σ − b equally, over every feasible b (exhaustive, vectorized)."""
    lo_b = max(0, budget_sum - (window - 1) * cap)
    b = np.arange(lo_b, min(budget_sum, cap) + 1, dtype=np.int64)
    first = fill.latencies(np.zeros_like(b), b)
    cost = first.copy()
    share = budget_sum - b
    for j in range(1, window):
        start = b + (share * (j - 1)) // (window - 1)
        stop = b + (share * j) // (window - 1)
        cost += fill.latencies(start, stop, j)
    feasible = (first <= deadline) | (b == 0)
    if not feasible.any():
        return fill_budget(fill, deadline, lo_b)
    cost[~feasible] = np.inf
    best = np.flatnonzero(cost == cost.min())
    return int(b[best[-1]])
