"""vLLM, Sarathi-Serve and Sarathi-EDF: their order, and their budget respected and filled."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings

from slidingpolicy import BatchPlan, LatencyPredictor, Request, SchedulerState, default_predictor
from slidingpolicy.policies import by_name
from slidingpolicy.testing.strategies import predictors, states
from tests.policies.builders import decode, prompt, snapshot

ORDERS: dict[str, Callable[[Request], Any]] = {
    "vllm": lambda r: (r.arrival, r.id),
    "sarathi": lambda r: (r.prefilled == 0, r.arrival, r.id),
    "sarathi-edf": lambda r: (r.arrival + r.ttft_slo, r.arrival, r.id),
}
BUDGETS = {"vllm": 8192, "sarathi": 512, "sarathi-edf": 512}


def prefill_chunks(state: SchedulerState, plan: BatchPlan) -> list[tuple[str, int]]:
    decoding = {r.id for r in state.decoding}
    return [(a.request_id, a.tokens) for a in plan.allocations if a.request_id not in decoding]


def expected_fill(
    state: SchedulerState, order: Callable[[Request], Any], budget: int
) -> list[tuple[str, int]]:
    """Decodes take one token each; the rest of min(budget, KV) goes greedily down `order`."""
    room = budget if state.kv_free_tokens is None else min(budget, state.kv_free_tokens)
    left = max(0, room - len(state.decoding))
    chunks = []
    for request in sorted(state.prefill_candidates, key=order):
        if left == 0:
            break
        take = min(left, request.remaining_prefill)
        chunks.append((request.id, take))
        left -= take
    return chunks


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(ORDERS))
@settings(max_examples=60, deadline=None)
@given(predictor=predictors(), state=states())
def test_prefills_fill_the_fixed_budget_greedily_in_the_baseline_order(
    name: str, predictor: LatencyPredictor, state: SchedulerState
) -> None:
    policy = by_name(name, predictor)
    plan, _ = policy.plan(policy.init(), state)
    assert policy.token_budget == BUDGETS[name]
    assert prefill_chunks(state, plan) == expected_fill(state, ORDERS[name], BUDGETS[name])


def test_sarathi_runs_in_progress_prefills_before_older_new_prompts() -> None:
    state = snapshot(
        decode("d0"),
        decode("d1"),
        prompt("new-old", 1.0, 300),
        prompt("started", 2.0, 500, prefilled=100),
        prompt("new-oldest", 0.5, 300),
    )
    policy = by_name("sarathi", default_predictor())
    plan, _ = policy.plan(policy.init(), state)
    assert plan.tokens_of() == {"d0": 1, "d1": 1, "started": 400, "new-oldest": 110}
    assert plan.total_tokens == 512


def test_sarathi_edf_serves_the_earliest_ttft_deadline_first() -> None:
    state = snapshot(
        prompt("early-arrival-late-deadline", 1.0, 400, ttft=10.0),
        prompt("late-arrival-early-deadline", 5.0, 400, ttft=1.0),
    )
    policy = by_name("sarathi-edf", default_predictor())
    plan, _ = policy.plan(policy.init(), state)
    assert [(a.request_id, a.tokens) for a in plan.allocations] == [
        ("late-arrival-early-deadline", 400),
        ("early-arrival-late-deadline", 112),
    ]


def test_vllm_fills_its_8192_token_budget() -> None:
    decodes = [decode(f"d{i}") for i in range(100)]
    state = snapshot(*decodes, prompt("long", 1.0, 10_000))
    policy = by_name("vllm", default_predictor())
    plan, _ = policy.plan(policy.init(), state)
    assert plan.tokens_of()["long"] == 8192 - 100
    assert plan.total_tokens == 8192


@pytest.mark.parametrize(("name", "budget"), [("vllm", 1024), ("sarathi", 256)])
def test_the_token_budget_option_sets_the_budget(name: str, budget: int) -> None:
    state = snapshot(decode("d0"), prompt("long", 1.0, 10_000))
    policy = by_name(name, default_predictor(), token_budget=budget)
    plan, _ = policy.plan(policy.init(), state)
    assert policy.token_budget == budget
    assert plan.total_tokens == budget


def test_free_kv_slots_cap_the_fill_below_the_budget() -> None:
    state = snapshot(*(decode(f"d{i}") for i in range(10)), prompt("long", 1.0, 4000), kv=300)
    policy = by_name("sarathi", default_predictor())
    plan, _ = policy.plan(policy.init(), state)
    assert plan.total_tokens == 300
    assert plan.tokens_of()["long"] == 290
