"""The policy's Prometheus metrics: exactly `slidingpolicy.telemetry.METRICS`, under their
names, types and labels; and the values a feed adds for given steps (what an engine's
scheduler adds over a workload is each adapter's test)."""

from __future__ import annotations

from collections import Counter

import pytest
from prometheus_client import CollectorRegistry

from slidingpolicy import (
    Allocation,
    BatchPlan,
    Diagnostics,
    PlanBranch,
    Request,
    SchedulerState,
    by_name,
    default_predictor,
)
from slidingpolicy.embedding import Decision
from slidingpolicy.embedding.prometheus import MetricsFeed, PolicyMetrics
from slidingpolicy.telemetry import METRICS

NOW = 100.0
BUDGET = 512
KINDS = {"counter": "counter", "gauge": "gauge", "histogram": "histogram"}


def _family_name(name: str, kind: str) -> str:
    """The family prometheus_client reports a metric under (a counter's without _total)."""
    return name.removesuffix("_total") if kind == "counter" else name


def _value(registry: CollectorRegistry, name: str, **labels: str) -> float:
    return registry.get_sample_value(name, labels) or 0.0


def _request(rid: str, slack: float, prefilled: int = 0) -> Request:
    """100 prompt tokens, its TTFT deadline `slack` seconds from NOW."""
    return Request(rid, NOW + slack - 2.0, 100, prefilled, 0, 2.0, 0.1)


def _plan(state: SchedulerState, branch: PlanBranch, margin: float, latency: float) -> BatchPlan:
    allocations = tuple(Allocation(r.id, 10) for r in state.prefill_candidates)
    prefill, diagnostics = 10 * len(allocations), Diagnostics(margin=margin)
    return BatchPlan(allocations, branch, "slidingserve+", prefill, latency, diagnostics)


def test_the_registry_holds_exactly_the_shared_metrics() -> None:
    registry = CollectorRegistry()
    PolicyMetrics(registry)
    families = {f.name: f for f in registry.collect()}
    expected = {_family_name(m.name, m.kind): m for m in METRICS}
    assert set(families) == set(expected)
    for name, family in families.items():
        spec = expected[name]
        assert family.type == KINDS[spec.kind]
        assert family.documentation == spec.help
    feed = MetricsFeed(PolicyMetrics(registry := CollectorRegistry()))
    state = SchedulerState(NOW, (_request("a", -1.0),), 8000.0)
    plan = _plan(state, PlanBranch.CHUNKER, 1.5, 0.01)
    policy = by_name("slidingserve+", default_predictor())
    feed.decided(policy, Decision(state, plan, None, BUDGET), {"k": 1}, lambda rid: True)
    feed.decided(policy, Decision(state, None, "policy raised E", BUDGET), {}, lambda rid: True)
    feed.observed(Decision(state, plan, None, BUDGET), state, plan, 0.02, None)
    exposed = {s.name for f in registry.collect() for s in f.samples}
    for spec in METRICS:
        assert spec.name in exposed or f"{spec.name}_count" in exposed, spec.name
        labelled = {tuple(sorted(s.labels)) for f in registry.collect() for s in f.samples
                    if s.name == spec.name}  # fmt: skip
        assert labelled <= {tuple(sorted(spec.labels)), tuple(sorted((*spec.labels, "le")))}


def test_a_feed_counts_plans_fallbacks_faults_and_the_margin() -> None:
    registry = CollectorRegistry()
    feed = MetricsFeed(PolicyMetrics(registry))
    policy = by_name("sarathi-edf", default_predictor())
    state = SchedulerState(NOW, (_request("a", 1.0),), 8000.0)
    live = {"a"}.__contains__
    faults: Counter[str] = Counter()
    for path, margin in [
        (PlanBranch.CHUNKER, 1.5),
        (PlanBranch.CHUNKER, 1.7),
        (PlanBranch.IDLE, 1.2),
    ]:
        feed.decided(
            policy, Decision(state, _plan(state, path, margin, 0.01), None, BUDGET), faults, live
        )
    faults["policy raised E"] += 2
    feed.decided(policy, Decision(state, None, "policy raised E", BUDGET), faults, live)
    faults["observe raised E"] += 1
    feed.decided(policy, Decision(None, None, "snapshot raised E", BUDGET), faults, live)
    assert _value(registry, "slidingpolicy_plans_total", path="chunker") == 2
    assert _value(registry, "slidingpolicy_plans_total", path="idle") == 1
    assert _value(registry, "slidingpolicy_fallback_steps_total", reason="policy raised E") == 1
    assert _value(registry, "slidingpolicy_fallback_steps_total", reason="snapshot raised E") == 1
    assert _value(registry, "slidingpolicy_faults_total", kind="policy raised E") == 2
    assert _value(registry, "slidingpolicy_faults_total", kind="observe raised E") == 1
    assert _value(registry, "slidingpolicy_latency_margin") == 1.2, "the last plan's"
    assert _value(registry, "slidingpolicy_demoted_requests_total") == 0, "sarathi-edf: none"


def test_a_feed_observes_step_times_and_late_starts() -> None:
    registry = CollectorRegistry()
    feed = MetricsFeed(PolicyMetrics(registry))
    state = SchedulerState(NOW, (_request("late", -1.5), _request("fresh", 0.5)), 8000.0)
    plan = _plan(state, PlanBranch.CHUNKER, 1.5, 0.04)
    feed.observed(Decision(state, plan, None, BUDGET), state, plan, 0.05, None)
    feed.observed(Decision(state, plan, "plan breaks invariant 2", BUDGET), state, plan, 0.2, None)
    assert _value(registry, "slidingpolicy_step_seconds_count") == 2
    assert _value(registry, "slidingpolicy_step_seconds_sum") == pytest.approx(0.25)
    assert _value(registry, "slidingpolicy_predicted_step_seconds_count") == 1, "planned only"
    assert _value(registry, "slidingpolicy_predicted_step_seconds_sum") == pytest.approx(0.04)
    assert _value(registry, "slidingpolicy_step_time_ratio_sum") == pytest.approx(1.25)
    assert _value(registry, "slidingpolicy_step_time_ratio_bucket", le="1.1") == 0
    assert _value(registry, "slidingpolicy_step_time_ratio_bucket", le="1.25") == 1
    assert _value(registry, "slidingpolicy_late_start_seconds_count") == 2, "once per step"
    assert _value(registry, "slidingpolicy_late_start_seconds_sum") == pytest.approx(3.0)
    assert _value(registry, "slidingpolicy_late_start_seconds_bucket", le="1.0") == 0


def test_a_demoted_request_is_counted_once_while_live() -> None:
    registry = CollectorRegistry()
    feed = MetricsFeed(PolicyMetrics(registry))
    policy = by_name("slidingserve+", default_predictor())
    requests = [_request(f"r{i}", -1.0) for i in range(100)]
    live = {r.id for r in requests}
    for step in range(3):
        state = SchedulerState(NOW + step, tuple(requests), 8000.0)
        feed.decided(policy, Decision(state, None, None, BUDGET), {}, live.__contains__)
    assert _value(registry, "slidingpolicy_demoted_requests_total") == 100
    # the first 50 leave, then the last 50 are seen again with a newcomer
    live -= {r.id for r in requests[:50]}
    newcomer = _request("new", -0.5)
    state = SchedulerState(NOW + 4, (*requests[50:], newcomer), 8000.0)
    live.add("new")
    feed.decided(policy, Decision(state, None, None, BUDGET), {}, live.__contains__)
    assert _value(registry, "slidingpolicy_demoted_requests_total") == 101


def test_a_feed_counts_given_up_and_cancelled_requests() -> None:
    registry = CollectorRegistry()
    feed = MetricsFeed(PolicyMetrics(registry))
    feed.given_up(2)
    feed.cancelled(1)
    feed.cancelled(1)
    assert _value(registry, "slidingpolicy_requests_given_up_total") == 2
    assert _value(registry, "slidingpolicy_requests_cancelled_total") == 2
