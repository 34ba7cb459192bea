"""SlidingServe as a whole: every plan passes check_plan, plans are deterministic, the
constructor path meets its anchor's slack, and the configurations compose as claimed."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slidingpolicy import (
    LatencyPredictor,
    Request,
    SchedulerState,
    SlidingConfig,
    SlidingServe,
    check_plan,
    default_predictor,
)
from slidingpolicy.policies import Online, OnlineConfig
from slidingpolicy.pricing.budget import fill_budget
from slidingpolicy.pricing.queue import PricedQueue
from slidingpolicy.stages.admit import admit
from slidingpolicy.stages.deadlines import window_deadlines
from slidingpolicy.stages.order import order_candidates
from slidingpolicy.testing.strategies import (
    NOW,
    configs,
    decode_sets,
    predictors,
    pressed_states,
    realistic_predictors,
    states,
)

any_predictor = st.one_of(predictors(), realistic_predictors())


@pytest.mark.slow
@given(st.one_of(states(), pressed_states()), any_predictor, configs())
@settings(max_examples=400)
def test_every_plan_passes_check_plan(
    state: SchedulerState, predictor: LatencyPredictor, config: SlidingConfig
) -> None:
    policy = SlidingServe(predictor, config)
    plan, _ = policy.plan(policy.init(), state)
    budget = config.max_batch_tokens
    assert check_plan(state, plan, budget, predictor=predictor, margin=policy.margin) == []
    assert plan.total_tokens <= config.max_batch_tokens


@pytest.mark.slow
@given(st.one_of(states(), pressed_states()), any_predictor, configs())
@settings(max_examples=150)
def test_plans_are_deterministic(
    state: SchedulerState, predictor: LatencyPredictor, config: SlidingConfig
) -> None:
    policy = SlidingServe(predictor, config)
    pstate = policy.init()
    assert policy.plan(pstate, state) == policy.plan(pstate, state)
    twin = SlidingServe(predictor, config)
    assert twin.plan(twin.init(), state) == policy.plan(pstate, state)


@pytest.mark.slow
@given(pressed_states(), any_predictor)
@settings(max_examples=300)
def test_constructor_plan_meets_its_anchor_slack(
    state: SchedulerState, predictor: LatencyPredictor
) -> None:
    policy = SlidingServe(predictor)
    plan, _ = policy.plan(policy.init(), state)
    if plan.branch != "constructor":
        return
    by_id = {r.id: r for r in state.requests}
    anchor = by_id[plan.diagnostics.anchor or ""]
    chunks = np.array([a.tokens for a in plan.allocations], dtype=np.int64)
    contexts = np.array(
        [by_id[a.request_id].context_tokens for a in plan.allocations], dtype=np.int64
    )
    latency = predictor.predict(chunks, contexts)
    assert latency == pytest.approx(plan.predicted_latency, rel=1e-9)
    assert latency <= anchor.deadline - state.now + 1e-12
    if plan.diagnostics.t_cur is not None:
        assert latency <= plan.diagnostics.t_cur + 1e-12
    for allocation in plan.allocations:
        request = by_id[allocation.request_id]
        if not request.is_decoding:
            assert allocation.tokens == request.remaining_prefill


@pytest.mark.slow
def test_pressed_states_reach_the_constructor() -> None:
    """The strategy above is not vacuous: it routes a good share of states to BatchConstructor."""
    seen: Counter[str] = Counter()
    policy = SlidingServe(default_predictor())

    @given(pressed_states())
    @settings(max_examples=200, database=None)
    def record(state: SchedulerState) -> None:
        seen[policy.plan(policy.init(), state)[0].branch] += 1

    record()
    assert seen["constructor"] >= 20, seen


@given(decode_sets(), st.floats(NOW - 1.0, NOW + 1.0), st.integers(1, 4))
@settings(max_examples=300)
def test_window_deadlines_are_the_minimum_over_the_safe_decodes(
    decodes: list[Request], now: float, window: int
) -> None:
    """W_j = min over D_safe of s_i + (j − 1)·L_tbt_i (eq. 7–8), float for float."""
    safe = [(d.deadline - now, d.tbt_slo) for d in decodes if d.deadline - now > 0.0]
    expected = tuple(min(s + j * tbt for s, tbt in safe) for j in range(window)) if safe else ()
    assert window_deadlines(decodes, now, window) == expected


@pytest.mark.slow
@given(st.one_of(states(), pressed_states()), any_predictor)
@settings(max_examples=200)
def test_window_one_without_constructor_is_greedy_eq_3(
    state: SchedulerState, predictor: LatencyPredictor
) -> None:
    """window=1: B = TimeToBudget(T_cur / m), or the whole cap when no decode constrains."""
    config = SlidingConfig(window=1, constructor=False)
    policy = SlidingServe(predictor, config)
    plan, _ = policy.plan(policy.init(), state)
    admission = admit(state, config.max_batch_tokens)
    queue = order_candidates(state.prefill_candidates, state.now, state.prefill_throughput, config)
    priced = PricedQueue.of(predictor, admission.decodes, queue)
    horizon = window_deadlines(admission.decodes, state.now, 1)
    cap = admission.prefill_cap
    expected = (
        fill_budget(priced, horizon[0] / policy.margin, cap) if horizon else min(cap, priced.total)
    )
    assert plan.prefill_budget == expected


@given(pressed_states(), any_predictor)
@settings(max_examples=100)
def test_constructor_off_never_takes_the_constructor_path(
    state: SchedulerState, predictor: LatencyPredictor
) -> None:
    policy = SlidingServe(predictor, SlidingConfig(constructor=False))
    assert policy.plan(policy.init(), state)[0].branch in ("chunker", "idle")


def test_online_refit_learns_the_observed_latencies() -> None:
    """Observing a hardware that is twice as slow as the predictor moves it towards 2×."""
    predictor = default_predictor()
    policy = Online(SlidingServe(predictor), OnlineConfig(refit_every=50, warmup=0))
    pstate = policy.init()
    rng = np.random.default_rng(0)
    for step in range(200):
        decodes = int(rng.integers(1, 64))
        requests = (
            *(
                Request(f"d{i}", 0.0, 500, 500, 1 + int(rng.integers(0, 50)), NOW + 10, 1.0)
                for i in range(decodes)
            ),
            Request("p", 0.0, 3000, 0, 0, NOW + 10, 1.0),
        )
        state = SchedulerState(NOW, requests, 8000.0)
        plan, pstate = policy.plan(pstate, state)
        by_id = {r.id: r for r in requests}
        chunks = np.array([a.tokens for a in plan.allocations], dtype=np.int64)
        contexts = np.array([by_id[a.request_id].context_tokens for a in plan.allocations])
        actual = 2.0 * predictor.predict(chunks, contexts)
        pstate = policy.observe(pstate, state, plan, actual)
        if step == 49:
            assert pstate.learner.since_refit == 0
    assert pstate.predictor != predictor
    test_chunks = np.array([1] * 30 + [1024], dtype=np.int64)
    test_contexts = np.array([600] * 30 + [0], dtype=np.int64)
    ratio = pstate.predictor.predict(test_chunks, test_contexts) / predictor.predict(
        test_chunks, test_contexts
    )
    assert ratio == pytest.approx(2.0, rel=0.05)


def test_observe_without_online_learning_keeps_the_state() -> None:
    policy = SlidingServe(default_predictor())
    pstate = policy.init()
    state = SchedulerState(1.0, (), 8000.0)
    plan, _ = policy.plan(pstate, state)
    assert plan.branch == "idle"
    assert policy.observe(pstate, state, plan, 0.01) is pstate
