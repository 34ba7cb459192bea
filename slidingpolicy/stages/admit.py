"""Which decodes fit this iteration, and the tokens left for prefill (invariants 2–5)."""

from __future__ import annotations

import attrs

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
