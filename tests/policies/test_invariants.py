"""One invariant suite over every registered policy (SPEC "Invariants" 1–8), and the test kit
a policy author runs (`slidingpolicy.testing.check_policy`), which ours pass too."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slidingpolicy import LatencyPredictor, SchedulerState, check_plan, default_predictor
from slidingpolicy.policies import by_name, names
from slidingpolicy.testing import check_decisions, check_policy
from slidingpolicy.testing.policy_check import any_states
from slidingpolicy.testing.strategies import predictors, states

SUITE = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("name", names())
@SUITE
@given(predictor=predictors(), state=states())
def test_every_plan_satisfies_invariants_1_to_7(
    name: str, predictor: LatencyPredictor, state: SchedulerState
) -> None:
    """With the predictor given, `check_plan` prices each batch itself (what the kit, which
    knows no predictor, takes from the plan)."""
    policy = by_name(name, predictor)
    plan, _ = policy.plan(policy.init(), state)
    assert check_plan(state, plan, token_budget=policy.token_budget, predictor=predictor) == []


@pytest.mark.parametrize("name", names())
@SUITE
@given(
    predictor=predictors(),
    steps=st.lists(st.tuples(any_states(), st.floats(0.0, 0.5)), min_size=2, max_size=4),
)
def test_plan_observe_plan_keeps_the_kits_properties_on_any_predictor(
    name: str, predictor: LatencyPredictor, steps: list[tuple[SchedulerState, float]]
) -> None:
    """Purity, the budget, invariants 1–7, determinism (invariant 8) and the plan's name, at
    each decision of a run of them, over any predictor."""
    check_decisions(by_name(name, predictor), steps)


@pytest.mark.parametrize("name", names())
def test_every_registered_policy_passes_the_kit(name: str) -> None:
    check_policy(by_name(name, default_predictor()))
