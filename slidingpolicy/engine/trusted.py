"""Trusted constructors: the records an engine rebuilds every iteration, without their checks.

An engine that keeps its own columns valid (0 ≤ prefilled ≤ prompt_tokens, distinct ids, no
arrival after `now`, and so on) rebuilds many `Request` records per iteration and one
`SchedulerState` per decision from them; re-running the records' validators there would cost
more than the policy. These build the same records (equal field by field, tested) from values
the caller vouches for. Anything else must use the checked constructors.
"""

from __future__ import annotations

from slidingpolicy.records.plan import trusted_allocation
from slidingpolicy.records.request import (
    Request,
    _new,
    _set_arrival,
    _set_context_tokens,
    _set_deadline,
    _set_generated,
    _set_id,
    _set_is_decoding,
    _set_max_new_tokens,
    _set_one_token,
    _set_prefilled,
    _set_prompt_tokens,
    _set_protected,
    _set_remaining_prefill,
    _set_tbt_slo,
    _set_ttft_slo,
    next_token_deadline,
)
from slidingpolicy.records.state import SchedulerState, listed_state


def trusted_request(
    id: str,
    arrival: float,
    prompt_tokens: int,
    prefilled: int,
    generated: int,
    ttft_slo: float,
    tbt_slo: float,
) -> Request:
    """`Request(id, arrival, ...)`, not protected and with no output cap, without its checks;
    the derived fields as `Request._derive` sets them. The engine's most frequent call."""
    record: Request = _new(Request)
    _set_id(record, id)
    _set_arrival(record, arrival)
    _set_prompt_tokens(record, prompt_tokens)
    _set_prefilled(record, prefilled)
    _set_generated(record, generated)
    _set_ttft_slo(record, ttft_slo)
    _set_tbt_slo(record, tbt_slo)
    _set_protected(record, False)
    _set_max_new_tokens(record, None)
    _set_deadline(record, next_token_deadline(arrival, ttft_slo, tbt_slo, generated))
    _set_remaining_prefill(record, prompt_tokens - prefilled)
    _set_context_tokens(record, prefilled + generated)
    _set_is_decoding(record, prefilled == prompt_tokens)
    _set_one_token(record, trusted_allocation(id, 1))
    return record


def trusted_state(
    now: float,
    requests: tuple[Request, ...],
    prefill_throughput: float,
    kv_free_tokens: int | None = None,
) -> SchedulerState:
    """`SchedulerState(now, requests, ...)` without its checks: `requests` a tuple of valid
    `Request` with distinct ids, none arrived after a finite `now`; a positive throughput.
    Still splits `decoding` and `prefill_candidates`, in state order."""
    return listed_state(now, requests, prefill_throughput, kv_free_tokens)
