"""A small stepping loop: run a policy on a tiny instance, the linear model as ground truth.

At each step the policy sees every arrived, unfinished request; its plan runs for
b0 + b1·tokens; prefill chunks advance `prefilled`, the chunk that completes a prompt
produces token 1, each decode token produces the next one; a request leaves after its
last output token. With nothing to run the clock jumps to the next arrival. The policy is
not told output lengths (that is the clairvoyant's privilege).
"""

from __future__ import annotations

from typing import Any

from proofs.clairvoyant import Instance, Schedule
from slidingpolicy.invariants import check_plan
from slidingpolicy.policy import Policy
from slidingpolicy.records.request import Request
from slidingpolicy.records.state import SchedulerState

MAX_STEPS = 10_000


def run(policy: Policy[Any], instance: Instance) -> Schedule:
    """The schedule `policy` produces on `instance`, until every request has finished or
    the last deadline has passed. Raises AssertionError on a plan that breaks an invariant."""
    jobs = sorted(instance.jobs, key=lambda j: (j.arrival, j.id))
    prefilled = {j.id: 0 for j in jobs}
    generated = {j.id: 0 for j in jobs}
    pstate = policy.init()
    now = jobs[0].arrival
    starts: list[float] = []
    batches: list[tuple[tuple[str, int], ...]] = []
    for _ in range(MAX_STEPS):
        live = [j for j in jobs if j.arrival <= now and generated[j.id] < j.output]
        future = [j.arrival for j in jobs if j.arrival > now]
        if now > instance.horizon or (not live and not future):
            break
        if not live:
            now = min(future)
            continue
        requests = tuple(
            Request(j.id, j.arrival, j.prompt, prefilled[j.id], generated[j.id], j.ttft, j.tbt)
            for j in live
        )
        state = SchedulerState(now, requests, prefill_throughput=1.0 / instance.b1)
        plan, pstate = policy.plan(pstate, state)
        broken = check_plan(state, plan, policy.token_budget)
        assert not broken, (policy.name, [str(v) for v in broken])
        if not plan.allocations:
            if not future:
                break
            now = min(future)
            continue
        batch = tuple((a.request_id, a.tokens) for a in plan.allocations)
        latency = instance.latency(sum(c for _, c in batch))
        starts.append(now)
        batches.append(batch)
        for rid, tokens in batch:
            job = next(j for j in jobs if j.id == rid)
            if prefilled[rid] < job.prompt:
                prefilled[rid] += tokens
                if prefilled[rid] == job.prompt:
                    generated[rid] = 1
            else:
                generated[rid] += 1
        now += latency
        pstate = policy.observe(pstate, state, plan, latency)
    return Schedule(tuple(starts), tuple(batches))
