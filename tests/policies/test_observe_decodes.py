"""observe_decodes equals observing each decode-only iteration, for every policy."""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slidingpolicy import LatencyPredictor, Request, SchedulerState, SlidingServe, default_predictor
from slidingpolicy.errors import InvalidRecordError
from slidingpolicy.policies import Online, OnlineConfig, OnlineState, by_name, names
from slidingpolicy.policy import DecodeRunObserver, Policy
from tests.strategies import predictors

decode_sets = st.lists(
    st.tuples(st.integers(1, 4000), st.integers(1, 300)), min_size=1, max_size=12
)
latencies = st.lists(st.floats(0.001, 0.2), min_size=1, max_size=12)


def step_by_step(
    policy: Policy[Any],
    pstate: Any,
    decodes: list[Request],
    seconds: list[float],
) -> Any:
    """Observe each iteration as the engine would if it stepped: plan, then observe."""
    now = max(d.arrival for d in decodes)
    for latency in seconds:
        state = SchedulerState(now, tuple(decodes), 8000.0)
        plan, pstate = policy.plan(pstate, state)
        assert sorted(a.request_id for a in plan.allocations) == sorted(d.id for d in decodes)
        pstate = policy.observe(pstate, state, plan, latency)
        decodes = [attrs.evolve(d, generated=d.generated + 1) for d in decodes]
        now += latency
    return pstate


def decoding(specs: list[tuple[int, int]]) -> list[Request]:
    return [Request(f"d{i}", 0.0, p, p, g, 1e6, 1e3) for i, (p, g) in enumerate(specs)]


@pytest.mark.parametrize("name", names())
@given(predictors(), decode_sets, latencies)
@settings(max_examples=40)
def test_observe_decodes_equals_observing_each_iteration(
    name: str, predictor: LatencyPredictor, specs: list[tuple[int, int]], seconds: list[float]
) -> None:
    policy = by_name(name, predictor)
    assert isinstance(policy, DecodeRunObserver)
    pstate = policy.init()
    decodes = decoding(specs)
    batched = policy.observe_decodes(pstate, decodes, seconds)
    assert batched == step_by_step(policy, pstate, decodes, seconds)


@given(predictors(tiles=True), decode_sets, latencies, st.integers(1, 5))
@settings(max_examples=60, deadline=None)  # the first refit imports scipy
def test_online_slidingserve_learns_the_same_in_closed_form(
    predictor: LatencyPredictor,
    specs: list[tuple[int, int]],
    seconds: list[float],
    refit_every: int,
) -> None:
    """With online learning on, statistics and refits match iteration for iteration (tile-aware
    predictors included: a decode run's tile count is that of its decodes)."""
    policy = Online(SlidingServe(predictor), OnlineConfig(refit_every=refit_every))
    pstate = policy.init()
    decodes = decoding(specs)
    batched = policy.observe_decodes(pstate, decodes, seconds)
    stepped = step_by_step(policy, pstate, decodes, seconds)
    assert isinstance(stepped, OnlineState)
    assert batched.since_refit == stepped.since_refit
    assert batched.predictor == stepped.predictor
    for field in ("gram", "moment", "yy", "count"):
        assert np.array_equal(getattr(batched.stats, field), getattr(stepped.stats, field))


@pytest.mark.parametrize("name", names())
@given(predictors(), decode_sets, latencies)
@settings(max_examples=20, deadline=None)  # the first refit imports scipy
def test_every_policy_learning_online_learns_the_same_in_closed_form(
    name: str, predictor: LatencyPredictor, specs: list[tuple[int, int]], seconds: list[float]
) -> None:
    """Any registered policy wrapped by `refit_every` observes decode runs exactly."""
    policy = by_name(name, predictor, refit_every=2)
    assert isinstance(policy, Online)
    pstate = policy.init()
    decodes = decoding(specs)
    batched = policy.observe_decodes(pstate, decodes, seconds)
    stepped = step_by_step(policy, pstate, decodes, seconds)
    assert (batched.policy, batched.inner, batched.since_refit) == (
        stepped.policy,
        stepped.inner,
        stepped.since_refit,
    )
    for field in ("gram", "moment", "yy", "count"):
        assert np.array_equal(getattr(batched.stats, field), getattr(stepped.stats, field))


def test_online_refuses_a_policy_that_cannot_observe_decode_runs() -> None:
    @attrs.frozen
    class Blind:
        predictor: LatencyPredictor
        name: str = "blind"
        token_budget: int = 1

    with pytest.raises(InvalidRecordError, match="must observe decode runs itself"):
        Online(Blind(default_predictor()), OnlineConfig())  # type: ignore[arg-type]
