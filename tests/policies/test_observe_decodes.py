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
from slidingpolicy.policies import learner as learning
from slidingpolicy.policy import DecodeRunObserver, Policy
from slidingpolicy.pricing.features import PREFILL
from slidingpolicy.testing.strategies import predictors

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
    stepped = step_by_step(policy, pstate, decodes, seconds)
    if isinstance(policy, Online):
        assert_same_learning(batched, stepped)
    else:
        assert batched == stepped


def assert_same_learning(batched: Any, stepped: Any) -> None:
    """Two online states learned the same, bit for bit: the policy they plan with, the
    learner's counters, statistics, window and pending rows."""
    assert isinstance(batched, OnlineState)
    assert isinstance(stepped, OnlineState)
    assert (batched.policy, batched.inner) == (stepped.policy, stepped.inner)
    one, other = batched.learner, stepped.learner
    assert (one.predictor, one.priced, one.since_refit, one.pending_rows) == (
        other.predictor,
        other.priced,
        other.since_refit,
        other.pending_rows,
    )
    for field in ("gram", "moment", "yy", "count"):
        assert np.array_equal(getattr(one.stats, field), getattr(other.stats, field))
    for field in ("features", "scenarios", "latencies", "size", "start"):
        assert np.array_equal(getattr(one.window, field), getattr(other.window, field))
    for field in ("features", "scenarios", "latencies"):
        assert np.array_equal(getattr(one.pending, field), getattr(other.pending, field))


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
    assert_same_learning(batched, step_by_step(policy, pstate, decodes, seconds))


@given(predictors(tiles=True), decode_sets, st.integers(1, 700), st.integers(0, 3))
@settings(max_examples=30, deadline=None)
def test_a_long_decode_run_folds_where_stepping_folds(
    predictor: LatencyPredictor, specs: list[tuple[int, int]], steps: int, priced: int
) -> None:
    """A decode run longer than `FOLD_ROWS`, after some priced batches (refits due), leaves
    the learner where stepping through it would: the same folds at the same rows."""
    policy = Online(SlidingServe(predictor), OnlineConfig(refit_every=2, warmup=1))
    pstate = policy.init()
    decodes = decoding(specs)
    for k in range(priced):
        tiles = [1.0] * (predictor.tile is not None)
        x = np.array([float(k + 2), 4.0, 0.0, 0.0, 0.0, 2.0, 2.0, *tiles])
        learner = learning.observe(pstate.learner, policy.config, x, PREFILL, 0.05)
        pstate = attrs.evolve(pstate, learner=learner)
    seconds = [0.01 + 1e-5 * j for j in range(steps)]
    batched = policy.observe_decodes(pstate, decodes, seconds)
    assert_same_learning(batched, step_by_step(policy, pstate, decodes, seconds))


@pytest.mark.parametrize("name", names())
@given(predictors(), decode_sets, latencies)
@settings(max_examples=20, deadline=None)  # the first refit imports scipy
def test_every_policy_learning_online_learns_the_same_in_closed_form(
    name: str, predictor: LatencyPredictor, specs: list[tuple[int, int]], seconds: list[float]
) -> None:
    """Any registered policy learning online observes decode runs exactly."""
    policy = by_name(name, predictor, refit_every=2)
    assert isinstance(policy, Online)
    pstate = policy.init()
    decodes = decoding(specs)
    batched = policy.observe_decodes(pstate, decodes, seconds)
    assert_same_learning(batched, step_by_step(policy, pstate, decodes, seconds))


def test_online_refuses_a_policy_that_cannot_observe_decode_runs() -> None:
    @attrs.frozen
    class Blind:
        predictor: LatencyPredictor
        name: str = "blind"
        token_budget: int = 1

    with pytest.raises(InvalidRecordError, match="must observe decode runs itself"):
        Online(Blind(default_predictor()), OnlineConfig())  # type: ignore[arg-type]


@pytest.mark.parametrize(("decodes", "iterations"), [(3, 1), (1, 3)])
def test_online_learns_a_run_whose_iterations_are_not_as_many_as_its_decodes(
    decodes: int, iterations: int
) -> None:
    """Not an error (docs/bad-input.md): `latencies` counts iterations, each giving every one
    of `decodes` a token, so the two lengths are unrelated (an engine's closed-form runs
    differ in most calls). The learner sees every iteration, priced with all the decodes."""
    policy = Online(SlidingServe(default_predictor()), OnlineConfig(refit_every=1, warmup=1))
    pstate = policy.init()
    run = decoding([(100, 1)] * decodes)
    seconds = [0.02] * iterations
    batched = policy.observe_decodes(pstate, run, seconds)
    assert_same_learning(batched, step_by_step(policy, pstate, run, seconds))
    assert batched.learner.pending_rows == pstate.learner.pending_rows + iterations
    assert batched.learner.pending.features[-1, 3] == decodes
