"""The window split of eq. 9: B* = argmin_b T̂₁(b) + T̂₂(B_Σ − b), exact or by ternary search."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import NDArray

from slidingpolicy.pricing.budget import fill_budget, largest_within
from slidingpolicy.pricing.features import (
    FloatArray,
    IntArray,
    chunk_piece,
    decode_terms,
    prefill_terms,
    scenario,
)
from slidingpolicy.pricing.queue import Piece, PricedQueue, TiledPiece

COST_TIE = 1e-12
"""Costs within this fraction of the least are equal, and the larger b wins (no deferral,
docs/decisions.md): the closed forms and the full price round differently, and one rounding
step must not decide between costs that are equal in exact arithmetic."""


def largest_least(bs: Sequence[int], costs: Sequence[float]) -> int:
    """The largest b whose cost is within COST_TIE of the least."""
    least = min(costs)
    bound = least + COST_TIE * abs(least)
    return max(b for b, cost in zip(bs, costs, strict=True) if cost <= bound)


def two_step_cost(priced: PricedQueue, b: int, budget_sum: int) -> float:
    """T̂₁(b) + T̂₂(B_Σ − b): this iteration runs stream [0, b), the next one [b, B_Σ)."""
    return priced.prefix(b) + priced.price(b, budget_sum, 1)


def _convex_candidates(now: Piece, then: Piece, whole: int, lo: int, hi: int) -> set[int]:
    """Points of [lo, hi] among which c ↦ now(c) + then(whole − c) attains its minimum.

    The sum is convex and quadratic between its two kinks (c = now.peak, c = whole −
    then.peak), so its minimum lies at an end, a kink, or the floor or ceiling of the vertex
    of the quadratic on some region (a zero peak weight makes two regions' slopes one).
    """
    points = {lo, hi, now.peak, now.peak + 1, whole - then.peak, whole - then.peak - 1}
    curve = now.curve + then.curve
    if curve > 0.0:
        base_slope = now.slope - then.slope - 2.0 * then.curve * whole
        for rising in {0.0, now.peak_weight}:
            for falling in {0.0, then.peak_weight}:
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


VECTOR_PIECES = 16
"""From this many pieces on, `exact_split` prices the candidates of the pieces whose special
points have closed forms all at once (`vector_candidates`); below, the per-piece loop is
faster (the crossover measured with the default predictor, 8 to 96 decodes)."""


def exact_split(priced: PricedQueue, budget_sum: int, cap: int, deadline: float) -> int:
    """The b in [B_Σ − cap, min(B_Σ, cap)] with T̂₁(b) ≤ deadline minimizing two_step_cost.

    Two iterations run at most 2·cap tokens, so B_Σ is taken as min(B_Σ, 2·cap).

    No feasible b exceeds TimeToBudget(deadline), which bounds the pieces searched. Per
    piece the cost is convex in the chunk away from 1-token chunks (proofs/split.md), so
    each piece contributes a few candidates priced by its closed forms, and its special
    points (a 1-token chunk in either iteration, or nothing left for the next) priced in
    full where no closed form covers them. Costs within COST_TIE are equal, and the larger b wins.
    When no b in range meets the deadline, the largest feasible b below the range is returned
    (the receding-horizon clamp).
    """
    budget_sum = min(budget_sum, 2 * cap)
    lo_b = max(0, budget_sum - cap)
    hi_b = min(budget_sum, fill_budget(priced, deadline, cap))
    candidates: list[tuple[int, float]] = []
    if lo_b == 0:
        candidates.append((0, two_step_cost(priced, 0, budget_sum)))
    first = priced.request_at(max(lo_b, 1))
    pieces: Sequence[int] = range(first, priced.request_at(hi_b) + 1 if hi_b > lo_b else first)
    if priced.predictor.tile is None:
        repeated = repeated_pieces(priced, pieces, budget_sum, lo_b, hi_b, deadline)
        pieces = [k for k in pieces if k not in repeated]
        if len(pieces) >= VECTOR_PIECES:
            found, found_costs, pieces = vector_candidates(
                priced, np.array(pieces), budget_sum, lo_b, hi_b, deadline
            )
            candidates.extend(zip(found.tolist(), found_costs.tolist(), strict=True))
    for k in pieces:
        candidates.extend(piece_candidates(priced, k, budget_sum, lo_b, hi_b, deadline))
    if not candidates:
        return fill_budget(priced, deadline, lo_b)
    bs, costs = zip(*candidates, strict=True)
    return largest_least(bs, costs)


def repeated_pieces(
    priced: PricedQueue,
    pieces: Sequence[int],
    budget_sum: int,
    lo_b: int,
    hi_b: int,
    deadline: float,
) -> set[int]:
    """The pieces j of `pieces` whose costs piece j + 1 repeats r_j tokens later, with every b
    of piece j + 1 feasible and in range: requests j − 1..j + 2 alike (same r ≥ 2 and u), all
    four before the request holding B_Σ, decodes in both iterations, seven features
    (proofs/split.md, *Repeated requests*). Equal costs go to the larger b, so their
    candidates can be skipped."""
    if priced.decodes == 0 or not pieces:
        return set()
    remaining, starts = priced.remaining, priced.starts
    shapes = list(zip(remaining, priced.contexts, strict=True))
    skipped: set[int] = set()
    ahead = False
    """Whether piece j + 2 met the deadline throughout, for j + 1 in the same run."""
    for j in range(min(pieces[-1], priced.request_at(budget_sum) - 3), max(pieces[0], 1) - 1, -1):
        if not (remaining[j] >= 2 and shapes[j - 1] == shapes[j] == shapes[j + 1] == shapes[j + 2]):
            ahead = False
            continue
        ahead = ahead or (
            starts[j + 2] <= hi_b
            and priced.prefix(starts[j + 2]) <= deadline
            and priced.prefix(starts[j + 1] + 1) <= deadline
        )
        if ahead and starts[j + 1] + 1 >= lo_b:
            skipped.add(j)
    return skipped


def piece_candidates(
    priced: PricedQueue, k: int, budget_sum: int, lo_b: int, hi_b: int, deadline: float
) -> list[tuple[int, float]]:
    """(b, two_step_cost) of the b in piece k ∩ [lo_b, hi_b] among which the feasible minimum
    of the piece lies (proofs/split.md §2): its special points priced in full where no closed
    form covers them, and the convex candidates of each span between its tile edges."""
    base = priced.starts[k]
    c_lo, c_hi = max(1, lo_b - base), min(priced.remaining[k], hi_b - base)
    now = priced.closing_chunk(k)
    then, whole, rest = priced.next_head(k, budget_sum)
    top = _feasible_top(priced, k, now, max(2, c_lo), c_hi, deadline)
    found = []
    if c_lo == 1 and (one := priced.prefix(base + 1)) <= deadline:
        left = whole - 1
        then_cost = then(left) if left >= 2 else priced.head_price(rest, k, whole, left)
        found.append((base + 1, one + then_cost))
    for c in (whole - 1, whole):
        if max(2, c_lo) <= c <= top:
            found.append((base + c, now(c) + priced.head_price(rest, k, whole, whole - c)))
    lo, hi = max(2, c_lo), min(top, whole - 2)
    for a, b in _tile_spans(now, then, whole, lo, hi):
        for c in _convex_candidates(now.smooth(), then.smooth(), whole, a, b):
            found.append((base + c, now(c) + then(whole - c)))
    return found


def _feasible_top(
    priced: PricedQueue, k: int, now: Piece, lo: int, hi: int, deadline: float
) -> int:
    """The largest chunk c in [lo, hi] of piece k with T̂₁ ≤ deadline (lo − 1 if none): T̂₁
    increases with c ≥ 2, so bisect the closed form, then settle ties with the exact price."""
    if hi < lo or now(hi) <= deadline:
        return hi
    top = largest_within(now, lo, hi, deadline)
    base = priced.starts[k]
    while top >= lo and priced.prefix(base + top) > deadline:
        top -= 1
    while top < hi and priced.prefix(base + top + 1) <= deadline:
        top += 1
    return top


def ternary_split(priced: PricedQueue, budget_sum: int, cap: int, deadline: float) -> int:
    """The paper's search (Alg. 1 line 4): integer ternary search of two_step_cost over the
    range, then clamped to the largest b at or below it that meets the deadline.

    Exact only where the cost is unimodal over the whole range (proofs/split.md).
    """
    budget_sum = min(budget_sum, 2 * cap)
    lo, hi = max(0, budget_sum - cap), min(budget_sum, cap)
    cost: Callable[[int], float] = lambda b: two_step_cost(priced, b, budget_sum)  # noqa: E731
    while hi - lo > 2:
        third = (hi - lo) // 3
        if cost(lo + third) > cost(hi - third):
            lo = lo + third + 1
        else:
            hi = hi - third
    last = range(lo, hi + 1)
    best = largest_least(last, [cost(b) for b in last])
    if best == 0 or priced.prefix(best) <= deadline:
        return best
    return fill_budget(priced, deadline, best)


def window_split(
    priced: PricedQueue, budget_sum: int, cap: int, deadline: float, window: int
) -> int:
    """Window k > 2 (our generalization of eq. 9): b minimizing T̂₁(b) plus the k − 1 later
    iterations sharing B_Σ − b equally, over every feasible b (exhaustive, vectorized)."""
    lo_b = max(0, budget_sum - (window - 1) * cap)
    b = np.arange(lo_b, min(budget_sum, cap) + 1, dtype=np.int64)
    first = priced.latencies(np.zeros_like(b), b)
    cost = first.copy()
    share = budget_sum - b
    for j in range(1, window):
        start = b + (share * (j - 1)) // (window - 1)
        stop = b + (share * j) // (window - 1)
        cost += priced.latencies(start, stop, j)
    feasible = (first <= deadline) | (b == 0)
    if not feasible.any():
        return fill_budget(priced, deadline, lo_b)
    least = cost[feasible].min()
    best = np.flatnonzero(feasible & (cost <= least + COST_TIE * abs(least)))
    return int(b[best[-1]])


_Closed = tuple[FloatArray, FloatArray, FloatArray, FloatArray, IntArray]
"""`Piece`s as arrays: base, slope, curve, peak_weight, peak."""


def _at(piece: _Closed, c: IntArray) -> FloatArray:
    """`Piece.__call__` on arrays, the same float operations in the same order."""
    base, slope, curve, peak_weight, peak = piece
    return base + c * (slope + curve * c) + peak_weight * np.maximum(peak, c)


def _column(piece: _Closed) -> _Closed:
    """The pieces as a column, to broadcast against several chunks each."""
    base, slope, curve, peak_weight, peak = piece
    return base[:, None], slope[:, None], curve[:, None], peak_weight[:, None], peak[:, None]


def _next_rest(priced: PricedQueue, ks: IntArray, budget_sum: int) -> tuple[IntArray, ...]:
    """`next_head`'s `rest` of pieces `ks`: the next iteration without its head chunk (the
    decodes a step on, requests k+1..e−1 whole and e's chunk; the decodes alone when k = e)."""
    wholes = priced.columns.wholes
    e = priced.request_at(budget_sum)
    after = np.minimum(ks + 1, e)
    step = decode_terms(priced.decodes, priced.decode_context + priced.decodes)
    t = [wholes[j][e] - wholes[j][after] + step[j] for j in range(6)]
    remaining = priced.columns.remaining[:e]
    peaks = np.append(np.maximum.accumulate(remaining[::-1])[::-1], 0)[after]
    t.append(np.where(peaks >= 2, peaks, 0))
    tail, tail_context = budget_sum - priced.starts[e], priced.contexts[e]
    if tail >= 2:
        a1, a2, a3, a6, a7 = prefill_terms(tail, tail_context)
        t = [t[0] + a1, t[1] + a2, t[2] + a3, t[3], t[4], t[5] + a6, np.maximum(t[6], a7)]
    else:
        t = [t[0], t[1], t[2] + tail_context, t[3] + 1, t[4] + tail_context, t[5], t[6]]
    inside = ks < e
    return tuple(np.where(inside, t[j], step[j]) for j in range(7))


def _closed_pieces(
    priced: PricedQueue,
    u: IntArray,
    whole: IntArray,
    x: tuple[IntArray, ...],
    t: tuple[IntArray, ...],
) -> tuple[_Closed, _Closed]:
    """`closing_chunk` and `next_head`'s piece as arrays (`PricedQueue._piece`), from request
    k's context `u` and `whole`, the features `x` before it and the next iteration's `rest` `t`."""
    coefficients = priced.predictor.coefficients
    w_now = coefficients[scenario(x[3], 1)].T
    w_then = coefficients[scenario(t[3], 1)].T
    now: _Closed = (*chunk_piece(w_now, x[:6], u, 0), w_now[7], x[6])
    then: _Closed = (*chunk_piece(w_then, t[:6], u + whole, -1), w_then[7], t[6])
    return now, then


def vector_candidates(
    priced: PricedQueue,
    ks: IntArray,
    budget_sum: int,
    lo_b: int,
    hi_b: int,
    deadline: float,
) -> tuple[IntArray, FloatArray, list[int]]:
    """`piece_candidates` of pieces `ks` at once, for a seven-feature predictor: the
    same (b, cost) pairs, bit for bit, of every piece whose special points have closed forms
    and whose chunks all meet the deadline; and the pieces left to `piece_candidates` (those
    where the deadline falls inside the piece, or one token is left of a 2-token window).

    Every price is the scalar code's on arrays (`features.linear`, `features.chunk_piece`,
    `LatencyPredictor.price_arrays`), so the floats are the same.
    """
    columns, price = priced.columns, priced.predictor.price_arrays
    base, r, u = columns.starts[ks], columns.remaining[ks], columns.contexts[ks]
    c_lo, c_hi = np.maximum(1, lo_b - base), np.minimum(r, hi_b - base)
    x = tuple(w[ks] for w in columns.wholes)
    t = _next_rest(priced, ks, budget_sum)
    whole = np.where(ks < priced.request_at(budget_sum), r, budget_sum - base)
    now, then = _closed_pieces(priced, u, whole, x, t)
    head = u + whole - 1
    # Request k's first token as a decode now, its last token as a decode next.
    one = price((x[0], x[1], x[2] + u, x[3] + 1, x[4] + u, x[5], x[6]))
    last_token = price((t[0], t[1], t[2] + head, t[3] + 1, t[4] + head, t[5], t[6]))
    lo = np.maximum(2, c_lo)
    binding = (c_hi >= lo) & (_at(now, c_hi) > deadline)
    regular = ~binding & ~((c_lo == 1) & (whole <= 2))
    keep = regular & (c_lo == 1) & (one <= deadline)
    found, costs = [(base + 1)[keep]], [(one + _at(then, whole - 1))[keep]]
    for c, next_price in ((whole - 1, last_token), (whole, price(t))):
        keep = regular & (lo <= c) & (c <= c_hi)
        found.append((base + c)[keep])
        costs.append((_at(now, c) + next_price)[keep])
    hi = np.minimum(c_hi, whole - 2)
    c, keep = _vector_convex(now, then, whole, lo, hi)
    keep &= regular[:, None]
    found.append((base[:, None] + c)[keep])
    costs.append((_at(_column(now), c) + _at(_column(then), whole[:, None] - c))[keep])
    return np.concatenate(found), np.concatenate(costs), ks[~regular].tolist()


def _vector_convex(
    now: _Closed, then: _Closed, whole: IntArray, lo: IntArray, hi: IntArray
) -> tuple[IntArray, NDArray[np.bool_]]:
    """`_convex_candidates` of every piece at once: a row of candidate chunks per piece, and
    which of them are candidates (in [lo, hi], a vertex only when near)."""
    curve = now[2] + then[2]
    base_slope = now[1] - then[1] - 2.0 * then[2] * whole
    rising = np.where(_RISING, now[3][:, None], 0.0)
    falling = np.where(_FALLING, then[3][:, None], 0.0)
    convex = curve > 0.0
    vertex = -(base_slope[:, None] + rising - falling) / np.where(convex, 2.0 * curve, 1.0)[:, None]
    near = convex[:, None] & (lo[:, None] - 1 <= vertex) & (vertex <= hi[:, None] + 1)
    vertex = np.where(near, vertex, 0.0)
    fixed = [lo, hi, now[4], now[4] + 1, whole - then[4], whole - then[4] - 1]
    c = np.concatenate(
        [np.stack(fixed, axis=1), np.floor(vertex).astype(np.int64), np.ceil(vertex)], axis=1
    ).astype(np.int64)
    valid = np.concatenate([np.ones((lo.size, len(fixed)), dtype=bool), near, near], axis=1)
    return c, valid & (lo[:, None] <= c) & (c <= hi[:, None])


_RISING = np.array([False, False, True, True])
_FALLING = np.array([False, True, False, True])
"""The four regions of `_convex_candidates`: whether c is past now's kink, h past then's."""
