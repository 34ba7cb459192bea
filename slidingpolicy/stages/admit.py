"""Which decodes fit this iteration, and turning token counts into allocations (invariants 2–5)."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from slidingpolicy.pricing.queue import greedy_fill
from slidingpolicy.records.plan import Allocation
from slidingpolicy.records.request import Request
from slidingpolicy.records.state import SchedulerState
from slidingpolicy.stages.order import fcfs_key


@attrs.frozen(slots=True)
class Admission:
    """The decodes that run now, those left out, and the tokens left for prefill.

    When not all fit, the oldest are kept (arrival, then id). Those left out are `preempted` when KV
    memory is the binding limit (the engine preempts them by recompute, newest first as vLLM
    does) and `deferred` when the token budget is (they wait a step).
    """

    decodes: tuple[Request, ...]
    preempted: tuple[str, ...]
    deferred: tuple[str, ...]
    prefill_cap: int


def admit(state: SchedulerState, token_budget: int) -> Admission:
    """Admit decodes within min(token budget, free KV slots); the rest of it is for prefill."""
    kv = state.kv_free_tokens
    limit = token_budget if kv is None else min(token_budget, kv)
    if len(state.decoding) <= limit:
        return Admission(state.decoding, (), (), limit - len(state.decoding))
    decodes = sorted(state.decoding, key=fcfs_key)
    left_out = tuple(d.id for d in decodes[limit:])
    by_kv = kv is not None and kv < token_budget
    return Admission(
        tuple(decodes[:limit]),
        left_out if by_kv else (),
        () if by_kv else left_out,
        0,
    )


def allocations(
    decodes: Sequence[Request], prefills: Sequence[tuple[Request, int]]
) -> tuple[Allocation, ...]:
    """One token per decode (invariant 2), then each prefill's chunk."""
    batch = [Allocation(d.id, 1) for d in decodes]
    batch += [Allocation(r.id, tokens) for r, tokens in prefills if tokens > 0]
    return tuple(batch)


def greedy_allocations(
    decodes: Sequence[Request], queue: Sequence[Request], budget: int
) -> tuple[Allocation, ...]:
    """Decodes, then a greedy fill of `budget` prefill tokens down the ordered queue."""
    chunks = greedy_fill([q.remaining_prefill for q in queue], budget)
    return allocations(decodes, list(zip(queue, chunks, strict=False)))
