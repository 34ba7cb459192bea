"""A plan in vLLM's terms: the waiting queues vLLM reads while a plan applies (only the planned
waiting requests, in plan order), how the real queues are restored after, and the per-request
caps on what vLLM would otherwise give a request."""

from __future__ import annotations

from collections.abc import Iterable

from slidingpolicy import SchedulerState
from vllm.v1.core.sched.request_queue import RequestQueue, SchedulingPolicy, create_request_queue
from vllm.v1.request import Request as VllmRequest


def binding_caps(state: SchedulerState, tokens: dict[str, int]) -> dict[str, int]:
    """The planned tokens of the requests vLLM would otherwise give more: a prefill chunk
    short of its remainder, 0 for a candidate or decode the plan leaves out. (vLLM gives a
    request at most what it has left, so a decode's one token and a whole remainder need no
    cap; waiting requests the plan leaves out are not in the queues vLLM reads.)"""
    caps = {d.id: 0 for d in state.decoding if d.id not in tokens}
    for candidate in state.prefill_candidates:
        planned = tokens.get(candidate.id, 0)
        if planned < candidate.remaining_prefill:
            caps[candidate.id] = planned
    return caps


def planned_queue(requests: Iterable[VllmRequest]) -> RequestQueue:
    """A first-come-first-served queue holding `requests` in order."""
    queue = create_request_queue(SchedulingPolicy.FCFS)
    for request in requests:
        queue.add_request(request)
    return queue


def restore_queue(
    original: RequestQueue, used: RequestQueue, planned: list[VllmRequest]
) -> RequestQueue:
    """`original` without the planned requests vLLM admitted, and with those it preempted
    into `used` in front, as vLLM puts them."""
    left = set(used)
    admitted = [r for r in planned if r not in left]
    if admitted:
        original.remove_requests(admitted)
    planned_set = set(planned)
    preempted = [r for r in used if r not in planned_set]
    if preempted:
        original.prepend_requests(reversed(preempted))
    return original
