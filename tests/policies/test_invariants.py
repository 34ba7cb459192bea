"""One invariant suite over every registered policy (SPEC "Invariants" 1–8)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slidingpolicy import LatencyPredictor, SchedulerState, check_plan
from slidingpolicy.policies import by_name, names
from tests.strategies import predictors, states

SUITE = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("name", names())
@SUITE
@given(predictor=predictors(), state=states())
def test_every_plan_satisfies_invariants_1_to_7(
    name: str, predictor: LatencyPredictor, state: SchedulerState
) -> None:
    policy = by_name(name, predictor)
    plan, _ = policy.plan(policy.init(), state)
    assert check_plan(state, plan, token_budget=policy.token_budget, predictor=predictor) == []


@pytest.mark.parametrize("name", names())
@SUITE
@given(predictor=predictors(), state=states())
def test_same_pstate_and_state_give_the_same_plan(
    name: str, predictor: LatencyPredictor, state: SchedulerState
) -> None:
    policy = by_name(name, predictor)
    pstate = policy.init()
    first, after_first = policy.plan(pstate, state)
    second, after_second = by_name(name, predictor).plan(pstate, state)
    assert repr(first) == repr(second)
    assert repr(after_first) == repr(after_second)


@pytest.mark.parametrize("name", names())
@SUITE
@given(
    predictor=predictors(),
    steps=st.lists(st.tuples(states(), st.floats(0.0, 0.5)), min_size=2, max_size=4),
)
def test_plan_observe_plan_keeps_satisfying_the_invariants(
    name: str, predictor: LatencyPredictor, steps: list[tuple[SchedulerState, float]]
) -> None:
    policy = by_name(name, predictor)
    pstate = policy.init()
    for state, latency in steps:
        plan, pstate = policy.plan(pstate, state)
        assert check_plan(state, plan, token_budget=policy.token_budget) == []
        pstate = policy.observe(pstate, state, plan, latency)
