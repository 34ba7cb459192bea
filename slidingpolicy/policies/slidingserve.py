"""SlidingServe (Fig. 3): MLPS order, violation check, then BatchConstructor or SlidingChunker."""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import numpy as np

from slidingpolicy import _validate
from slidingpolicy.pricing.features import DECODE, FloatArray, batch_features
from slidingpolicy.pricing.fit import PredictorStats, solve
from slidingpolicy.pricing.model import LatencyPredictor
from slidingpolicy.pricing.queue import Fill
from slidingpolicy.records.config import SlidingConfig
from slidingpolicy.records.plan import BatchPlan, Diagnostics, PlanPath
from slidingpolicy.records.request import Request
from slidingpolicy.records.state import SchedulerState
from slidingpolicy.stages.admit import Admission, admit, allocations, greedy_allocations
from slidingpolicy.stages.check import check_violations
from slidingpolicy.stages.chunk import sliding_chunk
from slidingpolicy.stages.construct import Construction, construct_batch
from slidingpolicy.stages.deadlines import window_deadlines
from slidingpolicy.stages.order import order_candidates


@attrs.frozen(slots=True)
class SlidingState:
    """What SlidingServe remembers: its predictor and, when it learns online, the statistics
    since the start and the observations since the last refit."""

    predictor: LatencyPredictor
    stats: PredictorStats | None = None
    since_refit: int = 0


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
        """Start from the offline predictor, with empty statistics if it learns online."""
        learns = self.config.refit_every is not None
        return SlidingState(self.predictor, PredictorStats.empty() if learns else None)

    def plan(self, pstate: SlidingState, state: SchedulerState) -> tuple[BatchPlan, SlidingState]:
        """One iteration of Fig. 3."""
        _validate.instance(f"policy {self.name!r}", "pstate", pstate, SlidingState)
        _validate.instance(f"policy {self.name!r}", "state", state, SchedulerState)
        config, now = self.config, state.now
        admission = admit(state, config.max_batch_tokens)
        queue = order_candidates(state.prefill_candidates, now, state.prefill_throughput, config)
        cap = admission.prefill_cap
        fill = Fill.of(pstate.predictor, admission.decodes, queue, reach=config.window * cap)
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
        latency = fill.prefix(decision.budget)
        plan = BatchPlan(
            allocations=greedy_allocations(
                admission.decodes, queue[: fill.pieces], decision.budget
            ),
            path=PlanPath.CHUNKER if admission.decodes or decision.budget else PlanPath.IDLE,
            prefill_budget=decision.budget,
            predicted_latency=latency,
            diagnostics=Diagnostics(t_cur=t_cur, t_next=t_next, budget_sum=decision.budget_sum),
            preempted=admission.preempted,
            deferred=admission.deferred,
        )
        return plan, pstate

    def observe(
        self, pstate: SlidingState, state: SchedulerState, plan: BatchPlan, latency: float
    ) -> SlidingState:
        """Add (batch, latency) to the statistics; refit every `refit_every` observations."""
        _validate.non_negative("observation", "latency", latency)
        if pstate.stats is None or not plan.allocations:
            return pstate
        by_id = {r.id: r for r in state.requests}
        chunks = np.array([a.tokens for a in plan.allocations], dtype=np.int64)
        contexts = np.array(
            [by_id[a.request_id].context_tokens for a in plan.allocations], dtype=np.int64
        )
        x, scenario = batch_features(chunks, contexts)
        return self._learn(pstate, pstate.stats, x, scenario, latency)

    def observe_decodes(
        self, pstate: SlidingState, decodes: Sequence[Request], latencies: Sequence[float]
    ) -> SlidingState:
        """Observe each decode-only iteration in turn (its features in closed form)."""
        count = len(decodes)
        context = sum(d.context_tokens for d in decodes)
        for step, latency in enumerate(latencies):
            if pstate.stats is None or not decodes:
                return pstate
            cached = float(context + step * count)
            x = np.array([0.0, 0.0, cached, float(count), cached, 0.0, 0.0])
            pstate = self._learn(pstate, pstate.stats, x, DECODE, latency)
        return pstate

    def _learn(
        self,
        pstate: SlidingState,
        stats: PredictorStats,
        x: FloatArray,
        scenario: int,
        latency: float,
    ) -> SlidingState:
        """Add one observation to `stats`; refit every `refit_every` of them, from the
        statistics since the start and the offline predictor as prior (`fit.solve`)."""
        stats = stats.add(x, scenario, latency, self.config.forgetting)
        seen = pstate.since_refit + 1
        if self.config.refit_every is None or seen < self.config.refit_every:
            return attrs.evolve(pstate, stats=stats, since_refit=seen)
        predictor = solve(
            stats,
            prior=self.predictor,
            source=self.predictor.source,
            prior_weight=self.config.prior_weight,
        )
        return SlidingState(predictor, stats, 0)


def _constructed(admission: Admission, built: Construction, diagnostics: Diagnostics) -> BatchPlan:
    prefills: list[tuple[Request, int]] = [(r, r.remaining_prefill) for r in built.chosen]
    return BatchPlan(
        allocations=allocations(admission.decodes, prefills),
        path=PlanPath.CONSTRUCTOR,
        prefill_budget=sum(tokens for _, tokens in prefills),
        predicted_latency=built.latency,
        diagnostics=diagnostics,
        preempted=admission.preempted,
        deferred=admission.deferred,
    )
