"""One SlidingServe decision (Fig. 3) and everything its stages found on the way.

`decide` is the chain: give up the hopeless requests (`stages.give_up`), prepare the draft
(admit, order, price, the window), then the BatchConstructor's stage when configured, and
the SlidingChunker's when the constructor passes. Each stage returns what it found beside its
plan, and the `Decision` keeps all of it; `SlidingServe.plan` is its `plan`. What only a
reader needs (each request's MLPS level, the decodes that set the window, every anchor the
constructor tried) is recorded on request (`Draft.record`), so that planning pays nothing
for it.
"""

from __future__ import annotations

import attrs

from slidingpolicy.pricing.model import LatencyPredictor
from slidingpolicy.records.plan import BatchPlan
from slidingpolicy.records.sliding_config import SlidingConfig
from slidingpolicy.records.state import SchedulerState
from slidingpolicy.stages.chunk import ChunkerStep, chunk_stage
from slidingpolicy.stages.construct import ConstructorStep, construct_stage
from slidingpolicy.stages.deadlines import binding_decodes
from slidingpolicy.stages.draft import Draft, prepare
from slidingpolicy.stages.give_up import hopeless, without
from slidingpolicy.stages.order import Rank, ranks


@attrs.frozen(slots=True)
class Decision:
    """A decision on `state`: the requests given up first (the later stages do not see
    them), the draft, the constructor's step (None when configured off), the chunker's (None
    when the constructor planned) and the plan, the given-up ids named in it.

    Recorded on request: `ranks`, the level and urgency of each request of the draft's
    queue, in its order, and `binders`, the decode that sets each W_j of the draft's horizon
    (both empty when not recorded).
    """

    state: SchedulerState
    given_up: tuple[str, ...]
    draft: Draft
    constructor: ConstructorStep | None
    chunker: ChunkerStep | None
    plan: BatchPlan
    ranks: tuple[Rank, ...] = ()
    binders: tuple[str, ...] = ()


def decide(
    predictor: LatencyPredictor,
    config: SlidingConfig,
    margin: float,
    state: SchedulerState,
    policy: str,
    record: bool = False,
) -> Decision:
    """SlidingServe's decision on a checked `state` with latency margin `margin`, for the plan
    of the policy named `policy` (module doc); with `record`, the ranks and binders too."""
    given_up = hopeless(state, config)
    rest = without(state, given_up) if given_up else state
    draft = prepare(predictor, config, margin, rest, policy, record)
    constructor = construct_stage(draft) if config.constructor else None
    chunker = None
    if constructor is not None and constructor.plan is not None:
        plan = constructor.plan
    else:
        chunker = chunk_stage(draft)
        plan = chunker.plan
    if given_up:
        plan = attrs.evolve(plan, given_up=given_up)
    if not record:
        return Decision(state, given_up, draft, constructor, chunker, plan)
    ranked = ranks(draft.queue, rest, config)
    binders = binding_decodes(draft.admission.decodes, draft.now, config.window)
    return Decision(state, given_up, draft, constructor, chunker, plan, ranked, binders)
