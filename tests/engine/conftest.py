"""Shared fixtures of the engine suites: a tiny FCFS policy with a batched observe, hardware,
predictors and small workloads."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

import attrs

from slidingpolicy import default_predictor
from slidingpolicy.hardware import HardwareModel, build_hardware
from slidingpolicy.pricing import LatencyPredictor
from slidingpolicy.records.plan import Allocation, BatchPlan
from slidingpolicy.records.request import Request
from slidingpolicy.records.state import SchedulerState
from slidingpolicy.stages.admit import admit
from slidingpolicy.stages.assemble import allocations, greedy_fill

HARDWARE = (("rtx3090", "qwen2.5-7b", 2), ("a100-80g", "llama3-8b", 1))


def greedy_allocations(
    decodes: Sequence[Request], queue: Sequence[Request], budget: int
) -> tuple[Allocation, ...]:
    """Decodes, then a greedy fill of `budget` prefill tokens down the ordered queue."""
    chunks = greedy_fill([q.remaining_prefill for q in queue], budget)
    return allocations(decodes, list(zip(queue, chunks, strict=False)))


@attrs.frozen(slots=True)
class Fcfs:
    """First come, first served with a token budget; counts what it observes (so that a
    closed-form run that skipped an observation would show)."""

    token_budget: int = 256
    name: str = "fcfs"

    def init(self) -> tuple[int, float]:
        return (0, 0.0)

    def plan(
        self, pstate: tuple[int, float], state: SchedulerState
    ) -> tuple[BatchPlan, tuple[int, float]]:
        admission = admit(state, self.token_budget)
        queue = sorted(state.prefill_candidates, key=lambda r: (r.arrival, r.id))
        allocations = greedy_allocations(admission.decodes, queue, admission.prefill_cap)
        prefill = sum(a.tokens for a in allocations) - len(admission.decodes)
        plan = BatchPlan(
            allocations,
            "whole",
            self.name,
            prefill,
            0.01,
            preempted=admission.preempted,
            deferred=admission.deferred,
        )
        return plan, pstate

    def observe(
        self, pstate: tuple[int, float], state: SchedulerState, plan: BatchPlan, latency: float
    ) -> tuple[int, float]:
        return (pstate[0] + 1, pstate[1] + latency)

    def observe_decodes(
        self, pstate: tuple[int, float], decodes: tuple[Request, ...], latencies: Sequence[float]
    ) -> tuple[int, float]:
        count, total = pstate
        for latency in latencies:
            count, total = count + 1, total + latency
        return (count, total)


@cache
def hardware(gpu: str, model: str, tp: int) -> HardwareModel:
    """A built-in hardware model (cached)."""
    return build_hardware(gpu, model, tp)


@cache
def predictor(gpu: str, model: str, tp: int) -> LatencyPredictor:
    """The packaged default predictor of a hardware profile (cached)."""
    return default_predictor(gpu, model, tp)
