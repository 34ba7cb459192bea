"""Trusted constructors: the records an engine rebuilds every iteration, without their checks.

An engine that keeps its own columns valid (0 ≤ prefilled ≤ prompt_tokens, distinct ids, no
arrival after `now`, and so on) rebuilds many `Request` records per iteration and one
`SchedulerState` per decision from them; re-running the records' validators there would cost
more than the policy. These build the same records (equal field by field, tested) from values
the caller vouches for. Anything else must use the checked constructors.
"""

from __future__ import annotations

from slidingpolicy.records.request import Request, trusted_request
from slidingpolicy.records.state import SchedulerState, listed_state

__all__ = ["trusted_request", "trusted_state"]


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
