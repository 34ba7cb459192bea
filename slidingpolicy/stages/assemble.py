"""Assemble a plan: the one place a `BatchPlan` is built from what the stages decided."""

from __future__ import annotations

from collections.abc import Sequence

from slidingpolicy.pricing.queue import PricedQueue
from slidingpolicy.records.plan import (
    Allocation,
    BatchPlan,
    Diagnostics,
    PlanBranch,
    trusted_allocation,
)
from slidingpolicy.records.request import Request
from slidingpolicy.stages.admit import Admission


def greedy_fill(remaining: Sequence[int], budget: int) -> list[int]:
    """Chunks of a greedy fill: each request in order takes min(r_i, what is left of budget)."""
    chunks = []
    left = budget
    for r in remaining:
        if r >= left:
            if left > 0:
                chunks.append(left)
            break
        chunks.append(r)
        left -= r
    return chunks


def allocations(
    decodes: Sequence[Request], prefills: Sequence[tuple[Request, int]]
) -> tuple[Allocation, ...]:
    """One token per decode (invariant 2, the record's own allocation), then each prefill's
    chunk (the ids are the records', the counts ≥ 1: trusted)."""
    batch = [d.one_token for d in decodes]
    batch += [trusted_allocation(r.id, tokens) for r, tokens in prefills if tokens > 0]
    return tuple(batch)


def assemble(
    admission: Admission,
    prefills: Sequence[tuple[Request, int]],
    branch: PlanBranch,
    policy: str,
    latency: float,
    diagnostics: Diagnostics | None = None,
) -> BatchPlan:
    """`policy`'s plan of the admitted decodes and these prefill chunks, decided on `branch`,
    with predicted `latency`; a batch with nothing to run is the idle branch."""
    batch = allocations(admission.decodes, prefills)
    return BatchPlan(
        allocations=batch,
        branch=branch if batch else PlanBranch.IDLE,
        policy=policy,
        prefill_budget=sum(tokens for _, tokens in prefills),
        predicted_latency=latency,
        diagnostics=Diagnostics() if diagnostics is None else diagnostics,
        preempted=admission.preempted,
        deferred=admission.deferred,
    )


def greedy_plan(
    priced: PricedQueue,
    admission: Admission,
    queue: Sequence[Request],
    budget: int,
    branch: PlanBranch,
    policy: str,
    diagnostics: Diagnostics | None = None,
) -> BatchPlan:
    """The admitted decodes plus a greedy fill of up to `budget` prefill tokens down `queue`.

    `priced` prices `queue` beside the admitted decodes; the budget is cut to the admission's
    prefill cap and to the queue's tokens, and the plan's predicted latency is T̂ of the batch.
    """
    budget = max(0, min(budget, admission.prefill_cap, priced.total))
    chunks = greedy_fill(priced.remaining, budget)
    prefills = list(zip(queue, chunks, strict=False))
    return assemble(admission, prefills, branch, policy, priced.prefix(budget), diagnostics)
