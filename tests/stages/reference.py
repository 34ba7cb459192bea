"""Slow, obvious reference implementations the fast paths are checked against."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from slidingpolicy import LatencyPredictor, Request
from slidingpolicy.pricing.budget import fill_budget
from slidingpolicy.pricing.queue import PricedQueue
from slidingpolicy.stages.construct import Construction, admit_anchor, choose


def interval_batch(
    decode_contexts: Sequence[int],
    remaining: Sequence[int],
    contexts: Sequence[int],
    lo: int,
    hi: int,
    step: int = 0,
) -> tuple[list[int], list[int]]:
    """The batch, built request by request, of the iteration `step` ahead running [lo, hi)."""
    chunks = [1] * len(decode_contexts)
    cached = [u + step for u in decode_contexts]
    start = 0
    for r, u in zip(remaining, contexts, strict=True):
        end = start + r
        c = max(0, min(end, hi) - max(start, lo))
        if c > 0:
            chunks.append(c)
            cached.append(u + max(0, lo - start))
        start = end
    return chunks, cached


def predicted(predictor: LatencyPredictor, batch: tuple[list[int], list[int]]) -> float:
    """T̂ of an explicit batch."""
    chunks, cached = batch
    return predictor.predict(np.array(chunks, dtype=np.int64), np.array(cached, dtype=np.int64))


def scan_budget(latencies: Sequence[float], target: float) -> int:
    """The largest b with latencies[b] ≤ target, else 0 (TimeToBudget by linear scan)."""
    fits = [b for b, t in enumerate(latencies) if t <= target]
    return fits[-1] if fits else 0


def one_anchor(
    base: PricedQueue,
    anchor: Request,
    members: Sequence[Request],
    now: float,
    limit: float,
    cap: int,
) -> Construction | None:
    """Y_a for one anchor with T_a = `limit` (eq. 17–20), as `construct_batch` solves each:
    C_a = TimeToBudget(T_a) over `base` capped at `cap`, the skip rules, then the knapsack."""
    capacity = fill_budget(base, limit, cap)
    admitted = admit_anchor(base, anchor, members, now, limit, capacity)
    return None if admitted is None else choose(base, admitted, now)
