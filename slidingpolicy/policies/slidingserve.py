"""SlidingServe (Fig. 3) as a chain of stages (`stages.decision`): prepare the draft (admit,
order, price), then the BatchConstructor's stage when a request is at risk, else the
SlidingChunker's; with a give-up delay, the hopeless requests are given up first
(`stages.give_up`). `decide` keeps what each stage found; `plan` is its plan."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from slidingpolicy import _arguments, _validate
from slidingpolicy.pricing.model import LatencyPredictor
from slidingpolicy.records.plan import BatchPlan
from slidingpolicy.records.request import Request
from slidingpolicy.records.sliding_config import SlidingConfig
from slidingpolicy.records.state import SchedulerState
from slidingpolicy.stages import decision


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

    def decide(self, state: SchedulerState) -> decision.Decision:
        """This policy's decision on `state` with everything its stages found, each request's
        MLPS level and the decodes that set the window included; its `plan` is `plan`'s."""
        _validate.instance(f"policy {self.name!r}", "state", state, SchedulerState)
        return decision.decide(
            self.predictor, self.config, self.margin, state, self.name, record=True
        )

    def plan(self, pstate: SlidingState, state: SchedulerState) -> tuple[BatchPlan, SlidingState]:
        """One iteration of Fig. 3 (`stages.decision.decide`, recording nothing more than the
        plan needs): the requests given up, if any, named in the plan."""
        _validate.instance(f"policy {self.name!r}", "pstate", pstate, SlidingState)
        _validate.instance(f"policy {self.name!r}", "state", state, SchedulerState)
        plan = decision.decide(self.predictor, self.config, self.margin, state, self.name).plan
        return plan, pstate

    def observe(
        self, pstate: SlidingState, state: SchedulerState, plan: BatchPlan, latency: float
    ) -> SlidingState:
        """Nothing to learn (the arguments must still be what they say)."""
        _arguments.observation(self.name, pstate, SlidingState, state, plan, latency)
        return pstate

    def observe_decodes(
        self, pstate: SlidingState, decodes: Sequence[Request], latencies: Sequence[float]
    ) -> SlidingState:
        """Nothing to learn (the arguments must still be what they say)."""
        _validate.instance(f"policy {self.name!r}", "pstate", pstate, SlidingState)
        _arguments.decode_run("observe_decodes", decodes, latencies)
        return pstate
