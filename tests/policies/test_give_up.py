"""Early notice of hopeless requests (`give_up_after` X), and the late grace and share an
operator sets on `slidingserve+`.

A waiting or prefilling request, not protected, whose TTFT deadline is at or before now − X
is given up: the plan names it, runs none of its tokens, and is otherwise the plan made
without it; the engine finishes it unserved, and no later plan sees it. So every first token
comes by d_i + X plus the batch that produced it, and every notice at or after d_i + X.
"""

from __future__ import annotations

import math
import re
from typing import Any

import attrs
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slidingpolicy import (
    BatchPlan,
    LatencyPredictor,
    SchedulerState,
    SlidingConfig,
    SlidingServe,
    check_plan,
    default_predictor,
)
from slidingpolicy.codec import plan_from_dict, plan_to_dict
from slidingpolicy.engine.run_errors import EngineError
from slidingpolicy.engine.run_types import EngineOptions
from slidingpolicy.engine.simulator import simulate
from slidingpolicy.errors import InvalidRecordError
from slidingpolicy.hardware import default_hardware
from slidingpolicy.policies import by_name
from slidingpolicy.policies.online import Online
from slidingpolicy.records.candidates import CandidateQueue
from slidingpolicy.records.plan import Allocation, PlanBranch
from slidingpolicy.stages.give_up import hopeless, without
from slidingpolicy.step_trace import TraceStep
from slidingpolicy.testing.strategies import configs, predictors, prefill_requests, states
from slidingpolicy.workloads import Poisson, make_workload
from tests.policies.builders import NOW, decode, prompt, snapshot

delays = st.sampled_from([0.0, 0.5, 2.0, 10.0])


def _expected(state: SchedulerState, after: float) -> set[str]:
    line = state.now - after
    return {r.id for r in state.prefill_candidates if r.deadline <= line and not r.protected}


@pytest.mark.slow
@given(states(), predictors(), configs(), delays)
@settings(max_examples=200, deadline=None)
def test_a_plan_gives_up_exactly_the_hopeless_and_is_otherwise_the_plan_without_them(
    state: SchedulerState, predictor: LatencyPredictor, config: SlidingConfig, after: float
) -> None:
    config = attrs.evolve(config, give_up_after=after)
    policy = SlidingServe(predictor, config)
    plan, _ = policy.plan(policy.init(), state)
    assert set(plan.given_up) == _expected(state, after)
    assert len(set(plan.given_up)) == len(plan.given_up)
    assert not set(plan.given_up) & set(plan.tokens_of())
    assert check_plan(state, plan, config.max_batch_tokens) == []
    rest, _ = policy.plan(policy.init(), without(state, plan.given_up))
    assert attrs.evolve(plan, given_up=()) == rest


@pytest.mark.slow
@given(states(), predictors(), configs())
@settings(max_examples=100, deadline=None)
def test_with_the_option_off_plans_are_what_they_were(
    state: SchedulerState, predictor: LatencyPredictor, config: SlidingConfig
) -> None:
    """Off (None), or so long that no request is that late: no request is given up, and the
    plan is the one the configuration without the option makes."""
    before = SlidingServe(predictor, attrs.evolve(config, give_up_after=None))
    plan, _ = before.plan(before.init(), state)
    assert plan.given_up == ()
    patient = SlidingServe(predictor, attrs.evolve(config, give_up_after=1e9))
    assert patient.plan(patient.init(), state)[0] == plan


@pytest.mark.slow
@given(st.lists(prefill_requests("x"), min_size=65, max_size=120), delays, st.integers(0, 5000))
@settings(max_examples=40, deadline=None)
def test_a_long_queue_gives_up_what_a_list_gives_up(
    drawn: list[Any], after: float, limit: int
) -> None:
    """The index (queues over 64) and the sort name the same requests, in the same order,
    of the shown ones only."""
    requests = [attrs.evolve(r, id=f"p{k}") for k, r in enumerate(drawn)]
    queue = CandidateQueue.of(requests, prompt_limit=limit)
    queued = SchedulerState.of(NOW, (), queue, 8000.0)
    listed = SchedulerState(NOW, tuple(queue.shown()), 8000.0)
    config = SlidingConfig(give_up_after=after)
    assert hopeless(queued, config) == hopeless(listed, config)
    assert without(queued, hopeless(queued, config)).prefill_candidates == (
        without(listed, hopeless(listed, config)).prefill_candidates
    )


def test_a_protected_or_decoding_request_is_never_given_up() -> None:
    late = prompt("late", arrival=NOW - 30.0, tokens=600, ttft=3.0)
    kept = attrs.evolve(prompt("kept", arrival=NOW - 30.0, tokens=600, ttft=3.0), protected=True)
    state = snapshot(decode("d", slack=-20.0), late, kept)
    policy = SlidingServe(default_predictor(), SlidingConfig(give_up_after=0.0))
    plan, _ = policy.plan(policy.init(), state)
    assert plan.given_up == ("late",)
    assert "d" in plan.tokens_of()


@pytest.mark.slow
@given(
    st.integers(0, 10**6),
    st.sampled_from([0.0, 2.0, 15.0]),
    st.sampled_from([8.0, 40.0]),
    st.sampled_from([0.2, 1.0]),
    st.sampled_from([None, 30_000]),
)
@settings(max_examples=15, deadline=None)
def test_in_the_engine_a_given_up_request_is_never_scheduled_again_and_waits_bounded(
    seed: int, after: float, rate: float, slo_scale: float, kv: int | None
) -> None:
    """Overloaded runs, every plan checked: no request given up appears in a later state;
    every first token comes by d_i + X plus the iteration that produced it; every notice is at
    or after d_i + X; metrics count the given up as missed and apart."""
    policy = by_name("slidingserve+", default_predictor(), give_up_after=after)
    workload = make_workload("mixed-v1", 60, Poisson(rate), seed, slo_scale)
    gone: set[str] = set()
    longest = [0.0]

    def record(step: TraceStep) -> None:
        assert not gone & {r.id for r in step.state.requests}
        if step.plan is not None:
            gone.update(step.plan.given_up)
        longest[0] = max(longest[0], step.latency or 0.0)

    options = EngineOptions(strict=True, kv_capacity_tokens=kv)
    run = simulate(policy, workload, default_hardware(), seed, options, on_step=record)
    out = run.outcome
    slo = workload.columns().ttft
    served = ~np.isnan(out.ttft)
    assert (out.ttft[served] <= slo[served] + after + longest[0] + 1e-9).all()
    noticed = ~np.isnan(out.given_up)
    assert (out.given_up[noticed] >= slo[noticed] + after - 1e-9).all()
    assert not (out.completed[noticed] | out.attained[noticed]).any()
    assert run.metrics.given_up == int(noticed.sum()) == len(gone)
    assert run.metrics.ttft_or_notice_p99 >= 0.0 or not (served | noticed).any()


def test_a_plan_that_gives_up_and_runs_nothing_moves_the_engine_on() -> None:
    """A step that only gives requests up is progress, not a stall."""
    workload = make_workload("sharegpt", 40, Poisson(40.0), 3, 0.05)
    policy = by_name("slidingserve+", default_predictor(), give_up_after=0.0, learn=False)
    run = simulate(policy, workload, default_hardware(), 3, EngineOptions(strict=True))
    assert not run.stalled
    assert run.metrics.given_up > 0
    assert run.metrics.completed + run.metrics.given_up == 40


def test_the_engine_refuses_to_give_up_a_request_that_is_not_live() -> None:
    @attrs.frozen
    class Ghostly:
        name: str = "ghostly"
        token_budget: int = 64

        def init(self) -> None:
            return None

        def plan(self, pstate: None, state: SchedulerState) -> tuple[BatchPlan, None]:
            return BatchPlan((), PlanBranch.IDLE, "slidingserve", 0, 0.0, given_up=("ghost",)), None

        def observe(self, pstate: None, *_: object) -> None:
            return None

    workload = make_workload("sharegpt", 2, Poisson(1.0), 0)
    with pytest.raises(EngineError, match="given up id 'ghost' is not a live request"):
        simulate(Ghostly(), workload, default_hardware(), 0, EngineOptions(strict=False))


def test_check_plan_names_a_bad_give_up() -> None:
    state = snapshot(decode("d"), prompt("p", arrival=NOW - 1.0, tokens=10))
    one = Allocation("p", 10)
    for given_up, allocations, message in (
        (("x",), (), "'x' is given up but is not a waiting request"),
        (("d",), (), "'d' is given up but is not a waiting request"),
        (("p", "p"), (), "'p' is given up twice"),
        (("p",), (one,), "'p' is given up and allocated"),
    ):
        plan = BatchPlan(
            allocations, PlanBranch.CHUNKER, "slidingserve", 10, 0.0, given_up=given_up
        )
        found = [str(v) for v in check_plan(state, plan) if v.invariant == 1]
        assert found == [f"invariant 1: {message}"]


def test_a_plan_with_requests_given_up_round_trips_and_one_without_reads_as_before() -> None:
    plan = BatchPlan(
        (Allocation("a", 3),), PlanBranch.CHUNKER, "slidingserve", 3, 0.01, given_up=("b", "c")
    )
    assert plan_from_dict(plan_to_dict(plan)) == plan
    assert "given_up" not in plan_to_dict(attrs.evolve(plan, given_up=()))


def test_slidingserve_plus_keeps_its_late_grace_and_share_unless_told() -> None:
    def config(**options: Any) -> SlidingConfig:
        policy = by_name("slidingserve+", default_predictor(), **options)
        inner = policy.inner if isinstance(policy, Online) else policy
        assert isinstance(inner, SlidingServe)
        return inner.config

    default = config()
    assert (default.late_grace, default.late_share, default.give_up_after) == (60.0, 0.1, None)
    chosen = config(late_grace=5.0, late_share=0.5, give_up_after=2.0, learn=False)
    assert (chosen.late_grace, chosen.late_share, chosen.give_up_after) == (5.0, 0.5, 2.0)
    assert config(late_grace=None).late_grace is None
    assert attrs.evolve(chosen, late_grace=60.0, late_share=0.1, give_up_after=None) == default


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"give_up_after": -1.0}, "policy 'slidingserve+': give_up_after=-1.0 must be >= 0"),
        ({"give_up_after": math.nan}, "policy 'slidingserve+': give_up_after=nan must be finite"),
        ({"give_up_after": math.inf}, "policy 'slidingserve+': give_up_after=inf must be finite"),
        (
            {"give_up_after": 1e11},
            "policy 'slidingserve+': give_up_after=1e+11 s is beyond 1e+10 s",
        ),
        ({"give_up_after": "soon"}, "policy 'slidingserve+': give_up_after must be a number"),
        ({"give_up_after": True}, "policy 'slidingserve+': give_up_after must be a number"),
        ({"late_share": 0.0}, "policy 'slidingserve+': late_share=0.0 must be in (0, 1]"),
        ({"late_share": 1.5}, "policy 'slidingserve+': late_share=1.5 must be in (0, 1]"),
        ({"late_grace": -5.0}, "policy 'slidingserve+': late_grace=-5.0 must be >= 0"),
        ({"kv_headroom": 16}, "policy 'slidingserve+': kv_headroom is not one of its options"),
    ],
)
def test_a_bad_tail_option_names_the_policy_the_option_and_its_range(
    options: dict[str, Any], message: str
) -> None:
    with pytest.raises(InvalidRecordError, match="^" + re.escape(message)):
        by_name("slidingserve+", default_predictor(), **options)
