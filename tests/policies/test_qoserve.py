"""QoServe: relegation exactly by its condition, relegated requests served last but served,
the hybrid key, the dynamic chunk from the menu, and the throughput average."""

from __future__ import annotations

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slidingpolicy import LatencyPredictor, LinearModel, Request, SchedulerState, default_predictor
from slidingpolicy.policies import QoServe, QoServeState, by_name
from slidingpolicy.testing.strategies import predictors, states
from tests.policies.builders import NOW, decode, prompt, snapshot

MENU = (128, 256, 512, 768, 1024, 1280, 1536, 1792, 2048)


def qoserve(predictor: LatencyPredictor | None = None) -> QoServe:
    policy = by_name("qoserve", predictor or default_predictor())
    assert isinstance(policy, QoServe)
    return policy


def meets_relegation_condition(request: Request, now: float, theta: float) -> bool:
    return request.prefilled == 0 and now + request.remaining_prefill / theta > (
        request.arrival + request.ttft_slo
    )


@settings(max_examples=80, deadline=None)
@given(predictor=predictors(), state=states(), theta=st.floats(50.0, 50_000.0))
def test_relegates_exactly_the_requests_meeting_the_condition(
    predictor: LatencyPredictor, state: SchedulerState, theta: float
) -> None:
    policy = qoserve(predictor)
    _, after = policy.plan(QoServeState(theta), state)
    expected = {r.id for r in state.requests if meets_relegation_condition(r, state.now, theta)}
    assert set(after.relegated) == expected


@settings(max_examples=80, deadline=None)
@given(predictor=predictors(), state=states(), theta=st.floats(50.0, 50_000.0))
def test_relegated_requests_get_tokens_only_after_every_other_prefill_got_its_whole_remainder(
    predictor: LatencyPredictor, state: SchedulerState, theta: float
) -> None:
    plan, after = qoserve(predictor).plan(QoServeState(theta), state)
    tokens = plan.tokens_of()
    relegated = set(after.relegated)
    if any(r.id in tokens for r in state.prefill_candidates if r.id in relegated):
        for r in state.prefill_candidates:
            if r.id not in relegated:
                assert tokens.get(r.id) == r.remaining_prefill


def test_relegation_is_for_good_and_forgets_requests_that_left() -> None:
    late = prompt("late", 90.0, 1000, ttft=1.0)
    previous = QoServeState(8500.0, relegated=("gone", "started"))
    started = prompt("started", 99.0, 1000, prefilled=10, ttft=50.0)
    _, after = qoserve().plan(previous, snapshot(late, started))
    assert after.relegated == ("late", "started")


def test_relegation_uses_the_expected_throughput() -> None:
    state = snapshot(prompt("r", NOW - 1.0, 1000, ttft=2.0))
    policy = qoserve()
    assert policy.plan(QoServeState(8500.0), state)[1].relegated == ()
    assert policy.plan(QoServeState(500.0), state)[1].relegated == ("r",)


def _run(request: Request, tokens: int) -> Request:
    """The request after an iteration that gave it `tokens` tokens."""
    if tokens == 0:
        return request
    if request.is_decoding:
        return attrs.evolve(request, generated=request.generated + 1)
    prefilled = request.prefilled + tokens
    done = prefilled == request.prompt_tokens
    return attrs.evolve(request, prefilled=prefilled, generated=1 if done else 0)


def test_relegated_requests_are_served_after_everyone_else_and_never_dropped() -> None:
    requests = {
        "late": prompt("late", 90.0, 3000, ttft=1.0),
        "live": prompt("live", 99.0, 3000, ttft=5.0),
    }
    policy = qoserve()
    pstate = policy.init()
    served: list[dict[str, int]] = []
    while not requests["late"].is_decoding:
        plan, pstate = policy.plan(pstate, snapshot(*requests.values()))
        served.append({k: v for k, v in plan.tokens_of().items() if k in requests})
        requests = {rid: _run(r, plan.tokens_of().get(rid, 0)) for rid, r in requests.items()}
        assert "late" in pstate.relegated
        assert len(served) < 10
    assert served[0] == {"live": 2048}
    assert served[1] == {"live": 952, "late": 2048 - 952}
    assert sum(step.get("late", 0) for step in served) == 3000


def test_hybrid_key_puts_a_short_later_request_before_a_long_earlier_one() -> None:
    # keys: a_i + L_ttft + 0.008·r_i = 90 + 20 + 16 = 126 for "long", 95 + 20 + 0.8 = 115.8
    state = snapshot(prompt("long", 90.0, 2000, ttft=20.0), prompt("short", 95.0, 100, ttft=20.0))
    plan, _ = qoserve().plan(QoServeState(8500.0), state)
    assert [(a.request_id, a.tokens) for a in plan.allocations] == [
        ("short", 100),
        ("long", 1948),
    ]


# T̂ = 0.01 + 1e-4·|D| + 1e-5·Σ_P c in every scenario (x4 and x6 only).
LINEAR = LinearModel(0.01, (0.0, 0.0, 0.0, 1e-4, 0.0, 1e-5, 0.0))
HAND = LatencyPredictor(LINEAR, LINEAR, LINEAR, fallback=LINEAR)


def hand_latency(total: int, decodes: int) -> float:
    return 0.01 + 1e-4 * decodes + 1e-5 * (total - decodes)


def test_dynamic_chunk_is_the_largest_menu_entry_within_the_slack_on_a_hand_computed_case() -> None:
    # 10 decodes, min slack 0.03 s: 1.2·T̂(N) ≤ 0.03 ⇔ 0.011 + 1e-5·(N − 10) ≤ 0.025
    # ⇔ N ≤ 1410, so N = 1280 (1.2·T̂ = 0.02844) and 1536 fails (1.2·T̂ = 0.031512).
    assert 1.2 * hand_latency(1280, 10) == pytest.approx(0.02844)
    assert 1.2 * hand_latency(1536, 10) == pytest.approx(0.031512)
    decodes = [decode("tight", slack=0.03)] + [decode(f"d{i}", slack=1.0) for i in range(9)]
    state = snapshot(*decodes, prompt("long", 99.0, 4000, ttft=100.0))
    plan, _ = qoserve(HAND).plan(QoServeState(8500.0), state)
    assert plan.tokens_of()["long"] == 1280 - 10
    assert plan.total_tokens == 1280
    assert plan.predicted_latency == pytest.approx(hand_latency(1280, 10))


@pytest.mark.parametrize(
    ("slack", "total"),
    [(-0.5, 128), (0.001, 128), (None, 2048)],
    ids=["late-decode-takes-the-smallest", "nothing-fits-takes-the-smallest", "no-decodes"],
)
def test_dynamic_chunk_edges(slack: float | None, total: int) -> None:
    decodes = [] if slack is None else [decode("d", slack=slack)]
    state = snapshot(*decodes, prompt("long", 99.0, 4000, ttft=100.0))
    plan, _ = qoserve(HAND).plan(QoServeState(8500.0), state)
    assert plan.total_tokens == total


def test_dynamic_chunk_reads_the_menu_option() -> None:
    policy = by_name("qoserve", HAND, menu=(100, 300))
    state = snapshot(decode("d", slack=1.0), prompt("long", 99.0, 4000, ttft=100.0))
    plan, _ = policy.plan(policy.init(), state)
    assert policy.token_budget == 300
    assert plan.total_tokens == 300


def test_observe_averages_the_plan_prefill_throughput() -> None:
    policy = qoserve(HAND)
    state = snapshot(prompt("p", 99.0, 1000, ttft=100.0))
    plan, pstate = policy.plan(policy.init(), state)
    assert plan.prefill_budget == 1000
    after = policy.observe(pstate, state, plan, 0.1)
    assert after.throughput == pytest.approx(0.995 * 8500.0 + 0.005 * 10_000.0)


def test_observe_without_prefill_keeps_the_throughput() -> None:
    policy = qoserve(HAND)
    state = snapshot(decode("d"))
    plan, pstate = policy.plan(policy.init(), state)
    assert policy.observe(pstate, state, plan, 0.02).throughput == 8500.0
