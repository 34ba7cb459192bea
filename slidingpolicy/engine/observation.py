"""How a policy observes a decode-only run the engine advanced in closed form.

Where every live request is decoding and all fit, the only valid plan gives each one token, and
the engine advances all iterations up to the next event at once. A policy that is a
`DecodeRunObserver` is told about the run in one call; any other observes each iteration as if
the engine had stepped: the state it would have planned on and the plan it would have had to
make. The engine knows the plan's allocations only, so that plan has path "vllm", prefill budget
0 and predicted latency 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from slidingpolicy.records.plan import Allocation, BatchPlan, PlanBranch
from slidingpolicy.records.request import Request
from slidingpolicy.records.state import SchedulerState


def observe_decode_run(
    policy: Any,
    pstate: Any,
    decodes: Sequence[Request],
    latencies: Sequence[float],
    start: float,
    prefill_throughput: float,
    kv_free_tokens: Sequence[int | None] | None = None,
) -> Any:
    """The policy's state after the decode-only run: `decodes` (as before the first iteration)
    each got one token in each iteration j, which took latencies[j] seconds from `start`.

    `policy.observe_decodes` when it offers one (a `DecodeRunObserver`; the attribute is looked
    up, as `isinstance` on the runtime-checkable protocol would, without its cost on the
    engine's path); otherwise `policy.observe` once per iteration (`decode_iterations`), with
    the snapshot's `prefill_throughput` (decode-only iterations leave it unchanged) and
    kv_free_tokens[j] (None: unlimited).
    """
    batched = getattr(policy, "observe_decodes", None)
    if batched is not None:
        return batched(pstate, decodes, latencies)
    iterations = decode_iterations(decodes, latencies, start, prefill_throughput, kv_free_tokens)
    for (state, plan), latency in zip(iterations, latencies, strict=True):
        pstate = policy.observe(pstate, state, plan, latency)
    return pstate


def decode_iterations(
    decodes: Sequence[Request],
    latencies: Sequence[float],
    start: float,
    prefill_throughput: float,
    kv_free_tokens: Sequence[int | None] | None = None,
) -> list[tuple[SchedulerState, BatchPlan]]:
    """The (state, plan) of each iteration of the run, as stepping would have them: iteration j
    starts at `start` plus the latencies before it (summed one at a time, as the engine's
    clock is), each decode has produced j more tokens, and every decode gets one token."""
    plan = BatchPlan(tuple(Allocation(d.id, 1) for d in decodes), PlanBranch.WHOLE, "", 0, 0.0)
    frees: list[int | None] = (
        [None] * len(latencies) if kv_free_tokens is None else list(kv_free_tokens)
    )
    result: list[tuple[SchedulerState, BatchPlan]] = []
    now = start
    for j, latency in enumerate(latencies):
        requests = tuple(attrs.evolve(d, generated=d.generated + j) for d in decodes)
        result.append((SchedulerState(now, requests, prefill_throughput, frees[j]), plan))
        now += latency
    return result
