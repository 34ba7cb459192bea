"""SlidingServe (Fig. 3) as a chain of stages: prepare the draft (admit, order, price), then
the BatchConstructor's stage when a request is at risk, else the SlidingChunker's; with a
give-up delay, the hopeless requests are given up first (`stages.give_up`)."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from slidingpolicy import _arguments, _validate
from slidingpolicy.pricing.model import LatencyPredictor
from slidingpolicy.records.config import SlidingConfig
from slidingpolicy.records.plan import BatchPlan
from slidingpolicy.records.request import Request
from slidingpolicy.records.state import SchedulerState
from slidingpolicy.stages.chunk import chunk_stage
from slidingpolicy.stages.construct import construct_stage
from slidingpolicy.stages.draft import Stage, first_plan, prepare
from slidingpolicy.stages.give_up import hopeless, without


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

    @property
    def stages(self) -> tuple[Stage, ...]:
        """The stages before the chunker: the BatchConstructor's, unless configured off."""
        return (construct_stage,) if self.config.constructor else ()

    def plan(self, pstate: SlidingState, state: SchedulerState) -> tuple[BatchPlan, SlidingState]:
        """One iteration of Fig. 3: prepare the draft, then its stages, the chunker last; the
        requests given up, if any, named in the plan and left out of the state it plans on."""
        _validate.instance(f"policy {self.name!r}", "pstate", pstate, SlidingState)
        _validate.instance(f"policy {self.name!r}", "state", state, SchedulerState)
        given_up = hopeless(state, self.config)
        if given_up:
            state = without(state, given_up)
        draft = prepare(self.predictor, self.config, self.margin, state, self.name)
        plan = first_plan(self.stages, chunk_stage, draft)
        return (attrs.evolve(plan, given_up=given_up) if given_up else plan), pstate

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
