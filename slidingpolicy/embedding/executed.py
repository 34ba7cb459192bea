"""The plan a step ran, as the policy's `observe` is told it: the engine may run a plan
short (a cache full, a request gone) or schedule the step itself."""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from slidingpolicy.records.plan import Allocation, BatchPlan, PlanBranch
from slidingpolicy.records.state import SchedulerState


def executed_plan(
    state: SchedulerState, plan: BatchPlan | None, ran: Mapping[str, int]
) -> tuple[BatchPlan, int]:
    """The plan as the engine ran it, for the policy's `observe`, and its prefill tokens:
    `plan` (the engine's own first-come plan when the engine scheduled the step itself) with
    the allocations the engine ran (request id → tokens) among the requests of `state`, each
    planned allocation kept where it ran as planned."""
    planned = {a.request_id: a for a in plan.allocations} if plan is not None else {}
    allocations: list[Allocation] = []
    prefill = 0
    for rid, tokens in ran.items():
        request = state.request(rid)
        if request is None:
            continue
        same = planned.get(rid)
        allocations.append(
            same if same is not None and same.tokens == tokens else Allocation(rid, tokens)
        )
        if not request.is_decoding:
            prefill += tokens
    base = plan if plan is not None else BatchPlan((), PlanBranch.WHOLE, "", 0, 0.0)
    executed = attrs.evolve(base, allocations=tuple(allocations), prefill_budget=prefill)
    return executed, prefill
