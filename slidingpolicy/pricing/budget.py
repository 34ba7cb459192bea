"""TimeToBudget: the most prefill tokens whose batch meets a latency target (eq. 3).

T̂(b) of "all decodes + greedy fill of b tokens" is not monotone in b, for two reasons:
eq. 4 counts a 1-token chunk as a decode, so the fill that ends one token into a request
(an *exception point*) has features the next point no longer has; and the scenario of eq. 5
changes where the first prefill chunk or the first decode enters the batch. Away from
exception points and within one scenario, every feature is non-decreasing in b and the
weights are non-negative, so T̂ is non-decreasing (proofs/monotonicity.md). The search
bisects each scenario segment, top segment first, then prices the exception points that
could still lie above the answer.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence

from slidingpolicy import _arguments, _validate
from slidingpolicy.pricing.model import LatencyPredictor
from slidingpolicy.pricing.queue import Piece, PricedQueue
from slidingpolicy.records.request import Request


def largest_within(piece: Piece, lo: int, hi: int, target: float) -> int:
    """The largest c in [lo, hi] with piece(c) ≤ target, or lo − 1 if none (piece increasing)."""
    return lo + bisect_right(range(lo, hi + 1), target, key=piece) - 1


def _is_exception(priced: PricedQueue, b: int) -> bool:
    """True when the fill of b tokens ends with a 1-token chunk of a longer remainder."""
    if b <= 0:
        return False
    k = priced.request_at(b)
    return b - priced.starts[k] == 1 and priced.remaining[k] >= 2


def _segments(
    priced: PricedQueue, limit: int
) -> tuple[list[tuple[int, int]], tuple[int, int] | None]:
    """Scenario segments of [0, limit] in increasing order, and the pure-prefill one if any.

    Decode-only fills come first (up to the first chunk ≥ 2), then, only when no decode is
    in the batch yet, pure-prefill fills until a 1-token request joins, then mixed fills.
    """
    first_p = next((k for k, r in enumerate(priced.remaining) if r >= 2), None)
    if first_p is None:
        return [(0, limit)], None
    start = priced.starts[first_p] + 2
    segments = [(0, min(start - 1, limit))]
    prefill: tuple[int, int] | None = None
    if priced.decodes == 0 and priced.wholes[first_p][3] == 0:
        ones = (k for k in range(first_p + 1, priced.count) if priced.remaining[k] == 1)
        one = next(ones, None)
        switch = limit + 1 if one is None else priced.starts[one] + 1
        prefill = (start, min(switch - 1, limit))
        segments.append(prefill)
        start = switch
    segments.append((start, limit))
    return [(lo, hi) for lo, hi in segments if lo <= hi], prefill


def _segment_top(priced: PricedQueue, lo: int, hi: int, target: float) -> int:
    """The largest non-exception b in [lo, hi] with T̂(b) ≤ target (T̂ monotone there), or −1.

    Bisects the piece ends in the segment first, then the chunk inside the next piece by its
    closed form (chunks ≥ 2 only: the 1-token chunk is the exception point).
    """
    cum = priced.starts
    ends = [lo, *cum[bisect_right(cum, lo) : bisect_right(cum, hi)]]
    count = bisect_right(ends, target, key=priced.prefix)
    if count == 0:
        return -1
    base = ends[count - 1]
    k = bisect_right(cum, base) - 1
    if k >= priced.count:
        return base
    if base - cum[k] >= 2 and base < cum[k] + priced.remaining[k]:
        return _within_piece(priced, k, base, hi, target)
    start = cum[k] + 2
    if start > min(hi, cum[k + 1]):
        return base
    found = _within_piece(priced, k, start, hi, target)
    return found if found >= start else base


def _within_piece(priced: PricedQueue, k: int, start: int, hi: int, target: float) -> int:
    """The largest b in [start, min(hi, cum[k+1])] inside piece k (chunk ≥ 2) within target."""
    cum = priced.starts[k]
    top = min(hi, cum + priced.remaining[k]) - cum
    found = cum + largest_within(priced.closing_chunk(k), start - cum, top, target)
    while found >= start and priced.prefix(found) > target:
        found -= 1
    while found + 1 <= cum + top and priced.prefix(found + 1) <= target:
        found += 1
    return found


def fill_budget(priced: PricedQueue, target: float, limit: int) -> int:
    """The largest b ≤ limit with T̂(decodes + greedy fill of b tokens) ≤ target, else 0
    (found once per queue, target and limit: `PricedQueue.budgets`)."""
    known = priced.budgets.get((target, limit))
    if known is None:
        known = priced.budgets[target, limit] = _search(priced, target, limit)
    return known


def _search(priced: PricedQueue, target: float, limit: int) -> int:
    """`fill_budget`, searched: the scenario segments top first, then the exception points."""
    limit = min(limit, priced.total)
    if priced.prefix(limit) <= target:
        return max(limit, 0)
    segments, prefill = _segments(priced, limit)
    best = -1
    for lo, hi in reversed(segments):
        top = hi - 1 if hi > lo and _is_exception(priced, hi) else hi
        best = _segment_top(priced, lo, top, target)
        if best >= 0:
            break
    if best + 1 <= limit and _is_exception(priced, best + 1) and priced.prefix(best + 1) <= target:
        best += 1
    if prefill is not None:
        for k in range(priced.count):
            b = priced.starts[k] + 1
            if best < b <= prefill[1] and priced.remaining[k] >= 2 and priced.prefix(b) <= target:
                best = b
    return max(best, 0)


def time_to_budget(
    predictor: LatencyPredictor,
    decodes: Sequence[Request],
    queue: Sequence[Request],
    target: float,
    limit: int,
) -> int:
    """The largest b ≤ limit such that all decodes plus a greedy fill of b prefill tokens from
    the ordered queue have predicted latency ≤ target (seconds); 0 when no b fits."""
    where = "time_to_budget"
    _validate.instance(where, "predictor", predictor, LatencyPredictor)
    _arguments.requests(where, "decodes", decodes, decoding=True)
    _arguments.requests(where, "queue", queue, decoding=False)
    target = _validate.seconds(where, "target", target)
    limit = _validate.integer(where, "limit", limit, 0)
    return fill_budget(PricedQueue.of(predictor, decodes, queue), target, limit)
