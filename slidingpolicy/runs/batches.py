"""The batches an engine run really executes, as predictor samples: what a predictor must be
accurate on (decode-heavy, small chunks), unlike the calibration's random batches."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from slidingpolicy.engine.simulator import simulate
from slidingpolicy.policies import by_name
from slidingpolicy.policy import DecodeRunObserver
from slidingpolicy.pricing.samples import Sample
from slidingpolicy.records.plan import BatchPlan
from slidingpolicy.records.request import Request
from slidingpolicy.records.state import SchedulerState
from slidingpolicy.runs.specs import RunSpec, predictor_of


class Recording:
    """A policy that plans as `inner` does and keeps every executed batch with its measured
    latency (decode-only runs advanced in closed form included, one sample per iteration)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name: str = inner.name
        self.token_budget: int = inner.token_budget
        self.samples: list[Sample] = []

    def init(self) -> Any:
        """The inner policy's state."""
        return self.inner.init()

    def plan(self, pstate: Any, state: SchedulerState) -> tuple[BatchPlan, Any]:
        """The inner policy's plan."""
        plan, after = self.inner.plan(pstate, state)
        return plan, after

    def observe(self, pstate: Any, state: SchedulerState, plan: BatchPlan, latency: float) -> Any:
        """Keep the batch that ran, then let the inner policy observe it."""
        if plan.allocations:
            context = {r.id: r.context_tokens for r in state.requests}
            self.samples.append(
                Sample(
                    [a.tokens for a in plan.allocations],
                    [context[a.request_id] for a in plan.allocations],
                    latency,
                )
            )
        return self.inner.observe(pstate, state, plan, latency)


class RecordingDecodeRuns(Recording):
    """A `Recording` of a `DecodeRunObserver`, observing decode-only runs at once as it does."""

    def observe_decodes(
        self, pstate: Any, decodes: Sequence[Request], latencies: Sequence[float]
    ) -> Any:
        """Keep each decode-only iteration (contexts one token longer each time)."""
        for step, latency in enumerate(latencies):
            contexts = [d.context_tokens + step for d in decodes]
            self.samples.append(Sample([1] * len(decodes), contexts, latency))
        return self.inner.observe_decodes(pstate, decodes, latencies)


def recording(inner: Any) -> Recording:
    """A recording of `inner` that observes decode-only runs the way `inner` does."""
    return RecordingDecodeRuns(inner) if isinstance(inner, DecodeRunObserver) else Recording(inner)


def engine_samples(spec: RunSpec) -> list[Sample]:
    """Every batch the run `spec` executes, with its measured (noisy) latency."""
    policy = recording(by_name(spec.policy, predictor_of(spec), **dict(spec.policy_options)))
    workload = spec.workload.build(spec.arrivals, spec.seed)
    simulate(policy, workload, spec.hardware.build(), spec.seed, spec.options)
    return policy.samples
