"""Oracles for TimeToBudget: linear scans over b, by PricedQueue.price and by explicit batches."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs
import numpy as np

from slidingpolicy.pricing.model import LatencyPredictor
from slidingpolicy.pricing.queue import PricedQueue

TOLERANCE = 1e-12
"""Seconds: T̂ computed from prefix sums and from an explicit batch may differ by rounding."""


def scan_price(priced: PricedQueue, target: float, limit: int) -> int:
    """The largest b in [0, min(limit, Σr)] with priced.price(0, b) ≤ target, else 0."""
    top = min(limit, priced.total)
    return next((b for b in range(top, -1, -1) if priced.price(0, b) <= target), 0)


def greedy_batch(
    decode_contexts: Sequence[int], remaining: Sequence[int], contexts: Sequence[int], b: int
) -> tuple[list[int], list[int]]:
    """(chunks, contexts) of all decodes plus a greedy fill of b tokens, request by request."""
    chunks = [1] * len(decode_contexts)
    cached = list(decode_contexts)
    left = b
    for r, u in zip(remaining, contexts, strict=True):
        if left <= 0:
            break
        take = min(r, left)
        chunks.append(take)
        cached.append(u)
        left -= take
    return chunks, cached


def explicit_latencies(
    predictor: LatencyPredictor,
    decode_contexts: Sequence[int],
    remaining: Sequence[int],
    contexts: Sequence[int],
    limit: int,
) -> list[float]:
    """T̂ for b = 0..min(limit, Σr), each from LatencyPredictor.predict on the built batch."""
    out = []
    for b in range(min(limit, sum(remaining)) + 1):
        chunks, cached = greedy_batch(decode_contexts, remaining, contexts, b)
        out.append(
            predictor.predict(np.array(chunks, dtype=np.int64), np.array(cached, dtype=np.int64))
        )
    return out


@attrs.frozen(slots=True)
class Accepted:
    """The answers a scan accepts: any b in [low, high] (they differ only by float ties)."""

    low: int
    high: int

    def __contains__(self, b: object) -> bool:
        return isinstance(b, int) and self.low <= b <= self.high


def scan_explicit(latencies: Sequence[float], target: float) -> Accepted:
    """Largest b with T̂(b) ≤ target − TOLERANCE, and with T̂(b) ≤ target + TOLERANCE."""

    def largest(bound: float) -> int:
        return next((b for b in range(len(latencies) - 1, -1, -1) if latencies[b] <= bound), 0)

    return Accepted(largest(target - TOLERANCE), largest(target + TOLERANCE))


def bisect_budget(price: Callable[[int], float], target: float, limit: int) -> int:
    """Plain bisection for the largest b ≤ limit with price(b) ≤ target, assuming monotone
    price: the shortcut that budget.py must not take (see test_budget's regression case)."""
    lo, hi = 0, limit
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if price(mid) <= target:
            lo = mid
        else:
            hi = mid - 1
    return lo
