"""The metrics every adapter exposes (`telemetry.METRICS`) follow Prometheus' conventions, and
the counts behind them: the requests MLPS demotes (late or shed, only under a policy that
demotes) and how late a prefill starts (now − d_i, of requests with nothing cached)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slidingpolicy import (
    Allocation,
    BatchPlan,
    PlanBranch,
    Request,
    SchedulerState,
    by_name,
    default_predictor,
)
from slidingpolicy.policies.learner import FOLD_ROWS
from slidingpolicy.telemetry import METRICS, demoted, late_starts, learner_rows
from slidingpolicy.testing.strategies import NOW, states

SLO = (2.0, 0.1)


def _waiting(rid: str, slack: float, prefilled: int = 0) -> Request:
    """A request of 100 prompt tokens whose TTFT deadline is `slack` seconds from NOW."""
    return Request(rid, NOW + slack - SLO[0], 100, prefilled, 0, *SLO)


def test_every_metric_is_named_and_typed_by_prometheus_conventions() -> None:
    names = [m.name for m in METRICS]
    assert len(set(names)) == len(names)
    for metric in METRICS:
        assert re.fullmatch(r"slidingpolicy_[a-z_]+[a-z]", metric.name), metric.name
        assert metric.name.endswith("_total") == (metric.kind == "counter"), metric.name
        assert all(re.fullmatch(r"[a-z]+", label) for label in metric.labels)
        assert metric.help.endswith(".")
        if metric.kind == "histogram":
            assert metric.name.endswith(("_seconds", "_ratio")), metric.name
            assert list(metric.buckets) == sorted(set(metric.buckets))
            assert metric.buckets[0] > 0
        else:
            assert metric.buckets == ()


def test_slidingserve_plus_demotes_the_requests_past_their_deadline() -> None:
    state = SchedulerState(
        NOW,
        (_waiting("late", -1.0), _waiting("due", 0.0), _waiting("live", 0.5),
         _waiting("started", -3.0, prefilled=40)),
        8000.0,
    )  # fmt: skip
    policy = by_name("slidingserve+", default_predictor())
    assert demoted(policy, state) == {"late", "due", "started"}
    assert demoted(by_name("slidingserve+", default_predictor(), learn=False), state) == {
        "late",
        "due",
        "started",
    }


@pytest.mark.parametrize(
    ("name", "options"),
    [
        ("sarathi-edf", {}),
        ("vllm", {}),
        ("slidingserve", {"demote_late": False}),
        ("slidingserve", {"order": "edf"}),
        ("sarathi-edf+sc", {}),
    ],
)
def test_a_policy_that_does_not_demote_demotes_nobody(
    name: str, options: dict[str, object]
) -> None:
    state = SchedulerState(NOW, (_waiting("late", -1.0),), 8000.0)
    assert demoted(by_name(name, default_predictor(), **options), state) == frozenset()


def test_burst_shedding_counts_as_demotion() -> None:
    # 8000 tokens/s cannot prefill two 100-token prompts due in 15 ms: one is given up
    state = SchedulerState(NOW, (_waiting("a", 0.015), _waiting("b", 0.015)), 8000.0)
    shedding = by_name("slidingserve", default_predictor(), shed_bursts=True)
    assert len(demoted(shedding, state)) == 1
    assert demoted(by_name("slidingserve", default_predictor()), state) == frozenset()


@pytest.mark.slow
@given(states())
@settings(max_examples=200)
def test_the_demoted_are_the_late_candidates(state: SchedulerState) -> None:
    found = demoted(by_name("slidingserve+", default_predictor()), state)
    assert found == {r.id for r in state.prefill_candidates if r.deadline <= state.now}


def test_a_late_start_is_how_far_past_its_deadline_a_waiting_request_starts() -> None:
    requests = (
        _waiting("late", -1.5),
        _waiting("early", 0.5),
        _waiting("resumed", -2.0, prefilled=50),
        _waiting("idle", -4.0),
    )
    state = SchedulerState(NOW, requests, 8000.0)
    plan = BatchPlan(
        tuple(Allocation(rid, 10) for rid in ("late", "early", "resumed")),
        PlanBranch.CHUNKER,
        "slidingserve",
        30,
        0.01,
    )
    assert late_starts(state, plan) == [pytest.approx(1.5)]


@pytest.mark.slow
@given(states())
@settings(max_examples=200)
def test_late_starts_are_non_negative_one_per_late_waiting_request(state: SchedulerState) -> None:
    policy = by_name("slidingserve+", default_predictor())
    plan, _ = policy.plan(policy.init(), state)
    found = late_starts(state, plan)
    late = [a for a in plan.allocations if (r := state.request(a.request_id)) is not None
            and r.prefilled == 0 and r.deadline <= state.now]  # fmt: skip
    assert len(found) == len(late)
    assert all(value >= 0.0 for value in found)


@settings(max_examples=20, deadline=None)
@given(steps=st.lists(st.tuples(st.integers(0, 3), st.booleans(), st.floats(0.001, 0.5)),
                      min_size=1, max_size=60))  # fmt: skip
def test_the_learner_holds_a_bounded_number_of_rows(steps: list[tuple[int, bool, float]]) -> None:
    """`learner_rows` counts the observed batches the learner holds (eq. 6, learned), never
    more than its window of priced batches and the rows waiting to be folded; 0 for a
    policy that does not learn."""
    window = 8
    policy = by_name("slidingserve+", default_predictor(), margin_window=window)
    pstate = policy.init()
    assert learner_rows(pstate) == 0
    assert learner_rows(by_name("sarathi-edf", default_predictor(), learn=False).init()) == 0
    for step, (decodes, prefill, latency) in enumerate(steps):
        requests = [Request(f"d{i}", NOW - 1.0, 100, 100, 1, *SLO) for i in range(decodes)]
        if prefill:
            requests.append(Request(f"p{step}", NOW - 0.1, 64, 0, 0, *SLO))
        state = SchedulerState(NOW, tuple(requests), 8000.0)
        plan, pstate = policy.plan(pstate, state)
        pstate = policy.observe(pstate, state, plan, latency)
        assert learner_rows(pstate) <= window + FOLD_ROWS
    if any(decodes or prefill for decodes, prefill, _ in steps):
        assert learner_rows(pstate) > 0, "a batch that ran is held until folded"
