"""greedy and the Table 4 ablations are SlidingServe configurations, plan for plan."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from slidingpolicy import LatencyPredictor, SchedulerState, SlidingConfig, SlidingServe
from slidingpolicy.policies import by_name
from slidingpolicy.predictor.profiling import default_predictor
from tests.strategies import predictors, states

CONFIGS = {
    "greedy": SlidingConfig(window=1, constructor=False),
    "sarathi-edf+sc": SlidingConfig(order="edf", constructor=False),
    "sarathi-edf+sc+mlps": SlidingConfig(order="mlps", constructor=False),
    "slidingserve": SlidingConfig(),
}


@pytest.mark.parametrize("name", sorted(CONFIGS))
@settings(max_examples=40, deadline=None)
@given(predictor=predictors(), state=states())
def test_variant_plans_equal_slidingserve_with_its_configuration(
    name: str, predictor: LatencyPredictor, state: SchedulerState
) -> None:
    variant = by_name(name, predictor)
    reference = SlidingServe(predictor, CONFIGS[name])
    assert variant.name == name
    assert repr(variant.plan(variant.init(), state)) == repr(
        reference.plan(reference.init(), state)
    )


def test_greedy_is_window_one_without_the_constructor() -> None:
    policy = by_name("greedy", default_predictor())
    assert isinstance(policy, SlidingServe)
    assert policy.config.window == 1
    assert not policy.config.constructor


def test_variants_take_the_free_knobs_as_options() -> None:
    policy = by_name("sarathi-edf+sc", default_predictor(), max_batch_tokens=4096)
    assert isinstance(policy, SlidingServe)
    assert policy.config == SlidingConfig(max_batch_tokens=4096, order="edf", constructor=False)
    assert policy.token_budget == 4096
