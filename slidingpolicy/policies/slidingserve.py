"""SlidingServe (Fig. 3): MLPS order, violation check, then BatchConstructor or SlidingChunker."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from slidingpolicy import _validate
from slidingpolicy.pricing.model import LatencyPredictor
from slidingpolicy.pricing.queue import PricedQueue
from slidingpolicy.records.config import SlidingConfig
from slidingpolicy.records.plan import BatchPlan, Diagnostics, PlanPath
from slidingpolicy.records.request import Request
from slidingpolicy.records.state import SchedulerState
from slidingpolicy.stages.admit import Admission, admit
from slidingpolicy.stages.assemble import assemble, greedy_plan
from slidingpolicy.stages.check import check_violations
from slidingpolicy.stages.chunk import sliding_chunk
from slidingpolicy.stages.construct import Construction, construct_batch
from slidingpolicy.stages.deadlines import window_deadlines
from slidingpolicy.stages.order import order_candidates


@attrs.frozen(slots=True)
class SlidingState:
    """What SlidingServe remembers between iterations: nothing (it learns online only when
    wrapped in `online.Online`)."""


@attrs.frozen(slots=True)
class SlidingServe:
    """The SlidingServe policy; `config` switches it into each ablation of Table 4."""

    predictor: LatencyPredictor
    config: SlidingConfig = attrs.field(factory=SlidingConfig)
    name: str = "slidingserve"

    def __attrs_post_init__(self) -> None:
        record = f"policy {self.name!r}"
        _validate.instance(record, "predictor", self.predictor, LatencyPredictor)
        _validate.instance(record, "config", self.config, SlidingConfig)

    @property
    def token_budget(self) -> int:
        """B_max."""
        return self.config.max_batch_tokens

    @property
    def margin(self) -> float:
        """m: the configured latency margin, else the predictor's."""
        margin = self.config.latency_margin
        return self.predictor.margin if margin is None else margin

    def init(self) -> SlidingState:
        """Nothing to remember."""
        return SlidingState()

    def plan(self, pstate: SlidingState, state: SchedulerState) -> tuple[BatchPlan, SlidingState]:
        """One iteration of Fig. 3."""
        _validate.instance(f"policy {self.name!r}", "pstate", pstate, SlidingState)
        _validate.instance(f"policy {self.name!r}", "state", state, SchedulerState)
        config, now = self.config, state.now
        admission = admit(state, config.max_batch_tokens)
        queue = order_candidates(state.prefill_candidates, now, state.prefill_throughput, config)
        cap = admission.prefill_cap
        fill = PricedQueue.of(self.predictor, admission.decodes, queue, reach=config.window * cap)
        margin = self.margin
        horizon = window_deadlines(admission.decodes, now, config.window)
        t_cur = horizon[0] if horizon else None
        t_next = horizon[1] - horizon[0] if len(horizon) > 1 else None
        if config.constructor and cap > 0:
            candidate = check_violations(fill, queue, cap, now, margin)
            if candidate.risky:
                built = construct_batch(
                    fill, candidate.members, candidate.risky, now, t_cur, cap, margin
                )
                if built is not None:
                    diagnostics = Diagnostics(
                        t_cur=t_cur,
                        t_next=t_next,
                        candidate_latency=candidate.latency,
                        risky=tuple(r.id for r in candidate.risky),
                        anchor=built.anchor.id,
                        anchor_slack=built.anchor.deadline - now,
                        repaired=built.repaired,
                    )
                    return _constructed(admission, built, diagnostics), pstate
        decision = sliding_chunk(fill, tuple(w / margin for w in horizon), cap, config)
        diagnostics = Diagnostics(t_cur=t_cur, t_next=t_next, budget_sum=decision.budget_sum)
        plan = greedy_plan(fill, admission, queue, decision.budget, PlanPath.CHUNKER, diagnostics)
        return plan, pstate

    def observe(
        self, pstate: SlidingState, state: SchedulerState, plan: BatchPlan, latency: float
    ) -> SlidingState:
        """Nothing to learn (a latency must still be one)."""
        _validate.non_negative("observation", "latency", latency)
        return pstate

    def observe_decodes(
        self, pstate: SlidingState, decodes: Sequence[Request], latencies: Sequence[float]
    ) -> SlidingState:
        """Nothing to learn."""
        return pstate


def _constructed(admission: Admission, built: Construction, diagnostics: Diagnostics) -> BatchPlan:
    prefills = [(r, r.remaining_prefill) for r in built.chosen]
    return assemble(admission, prefills, PlanPath.CONSTRUCTOR, built.latency, diagnostics)
