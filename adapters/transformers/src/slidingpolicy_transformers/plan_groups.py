"""A plan in continuous batching's terms: the calls of the engine's `_process_candidates` that
give each planned request its planned tokens and no more."""

from __future__ import annotations

from collections.abc import Callable

from slidingpolicy import BatchPlan, SchedulerState
from transformers.generation.continuous_batching.requests import RequestState


def plan_groups(
    state: SchedulerState,
    plan: BatchPlan,
    found: Callable[[str], RequestState | None],
    limit: int,
) -> list[tuple[list[RequestState], int]]:
    """The plan's requests (`found` gives the engine's state of an id) as the engine's calls:
    each run of requests given their whole remainder (decodes included) with its tokens as
    budget, and each chunk short of its remainder alone; at most `limit` requests (the
    engine's `max_requests_per_batch`)."""
    groups: list[tuple[list[RequestState], int]] = []
    run: list[RequestState] = []
    budget = 0
    for allocation in plan.allocations[:limit]:
        rid = allocation.request_id
        engine, record = found(rid), state.request(rid)
        if engine is None or record is None:
            continue
        if record.is_decoding or allocation.tokens >= record.remaining_prefill:
            run.append(engine)
            budget += allocation.tokens
            continue
        if run:
            groups.append((run, budget))
            run, budget = [], 0
        groups.append(([engine], allocation.tokens))
    if run:
        groups.append((run, budget))
    return groups
