"""The loop the FCFS-family baselines share: decodes first, then a greedy fill of the prefill
queue, in the baseline's own order, up to a fixed token budget (vLLM, Sarathi-Serve, Sarathi-EDF).

Nothing here knows about SLOs: a baseline is this loop plus a queue order and a budget.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from slidingpolicy import _arguments, _validate
from slidingpolicy.pricing.model import LatencyPredictor
from slidingpolicy.pricing.queue import PricedQueue
from slidingpolicy.records.plan import BatchPlan, PlanBranch
from slidingpolicy.records.request import Request
from slidingpolicy.records.state import SchedulerState
from slidingpolicy.stages.admit import admit
from slidingpolicy.stages.assemble import greedy_plan
from slidingpolicy.stages.order import QueueOrder, ordered_head


@attrs.frozen(slots=True)
class Stateless:
    """The policy state of a baseline that remembers nothing between iterations."""


@attrs.frozen(slots=True)
class FixedBudget:
    """A fixed token budget per iteration: decodes first, then prefills in `order`.

    - `token_budget`: tokens per iteration, decodes included (the chunk size).
    """

    predictor: LatencyPredictor
    name: str
    token_budget: int
    order: QueueOrder

    def __attrs_post_init__(self) -> None:
        _validate.integer(f"policy {self.name!r}", "token_budget", self.token_budget, 1)
        _validate.instance(f"policy {self.name!r}", "predictor", self.predictor, LatencyPredictor)

    def init(self) -> Stateless:
        """Nothing to remember."""
        return Stateless()

    def plan(self, pstate: Stateless, state: SchedulerState) -> tuple[BatchPlan, Stateless]:
        """Admit the decodes, then fill what is left of the budget down the ordered queue."""
        _validate.instance(f"policy {self.name!r}", "pstate", pstate, Stateless)
        _validate.instance(f"policy {self.name!r}", "state", state, SchedulerState)
        admission = admit(state, self.token_budget)
        queue = ordered_head(state, self.order, admission.prefill_cap)
        priced = PricedQueue.of(
            self.predictor, admission.decodes, queue, reach=admission.prefill_cap
        )
        return greedy_plan(
            priced, admission, queue, admission.prefill_cap, PlanBranch.WHOLE, self.name
        ), pstate

    def observe(
        self, pstate: Stateless, state: SchedulerState, plan: BatchPlan, latency: float
    ) -> Stateless:
        """Nothing to learn (the arguments must still be what they say)."""
        _arguments.observation(self.name, pstate, Stateless, state, plan, latency)
        return pstate

    def observe_decodes(
        self, pstate: Stateless, decodes: Sequence[Request], latencies: Sequence[float]
    ) -> Stateless:
        """Nothing to learn (the arguments must still be what they say)."""
        _validate.instance(f"policy {self.name!r}", "pstate", pstate, Stateless)
        _arguments.decode_run("observe_decodes", decodes, latencies)
        return pstate
