"""Which decodes fit this iteration, and the tokens left for prefill (invariants 2–5)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import attrs

from slidingpolicy.records.candidates import arrival_key
from slidingpolicy.records.request import Request
from slidingpolicy.records.state import SchedulerState


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
    decodes = sorted(state.decoding, key=arrival_key)
    left_out = tuple(d.id for d in decodes[limit:])
    by_kv = kv is not None and kv < token_budget
    return Admission(
        tuple(decodes[:limit]),
        left_out if by_kv else (),
        () if by_kv else left_out,
        0,
    )


def kv_admitted(
    stream: Iterable[Request], free: int | None, decodes: int, headroom: int
) -> Iterator[Request]:
    """The requests of `stream` a plan may run (`SlidingConfig.kv_headroom`): every one
    already prefilling (its prompt is reserved), and waiting ones, in order, while the free KV
    slots each one's prompt leaves are at least `headroom` per running request, itself
    included, or nothing else runs (so that a long prompt is never kept out of an idle
    cache); after the first that cannot start, none behind it does (none overtakes it).
    `free` is the state's `kv_free_tokens` (None: unlimited), `decodes` the decodes
    admitted."""
    if free is None or headroom == 0:
        yield from stream
        return
    left, running, starting = free - decodes, decodes, True
    for request in stream:
        if request.prefilled > 0:
            left -= request.remaining_prefill
            running += 1
            yield request
            continue
        fits = running == 0 or left - request.prompt_tokens >= headroom * (running + 1)
        starting = starting and fits
        if starting:
            left -= request.prompt_tokens
            running += 1
            yield request
