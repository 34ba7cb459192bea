"""The candidate batch and the violation check (Alg. 3 lines 1–3)."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from slidingpolicy.pricing.queue import PricedQueue
from slidingpolicy.records.request import Request


@attrs.frozen(slots=True)
class CandidateBatch:
    """The queue filled greedily up to the cap: its members, T̂_full and the risky requests."""

    members: tuple[Request, ...]
    latency: float
    risky: tuple[Request, ...]


def check_violations(
    priced: PricedQueue, queue: Sequence[Request], cap: int, now: float, margin: float = 1.0
) -> CandidateBatch:
    """Fill `queue` up to `cap` tokens, predict T̂_full, and flag the live prefill requests of
    that batch whose TTFT slack is below it with the latency margin (0 < s_i < m·T̂_full)."""
    tokens = min(cap, priced.total)
    latency = priced.prefix(tokens)
    members = tuple(queue[: priced.request_at(tokens) + 1]) if tokens > 0 else ()
    risky = tuple(m for m in members if 0.0 < m.slack(now) < margin * latency)
    return CandidateBatch(members, latency, risky)
