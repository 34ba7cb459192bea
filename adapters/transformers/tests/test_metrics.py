"""The policy's Prometheus metrics: exactly `slidingpolicy.telemetry.METRICS`, under their
names, types and help (vLLM's adapter exposes the same); the values a feed adds for given
steps; and what the scheduler adds while the engine runs a workload (the process's default
registry, read before and after)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from prometheus_client import REGISTRY, CollectorRegistry
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
from slidingpolicy.telemetry import METRICS

from slidingpolicy_transformers.engine import Engine, EngineSettings
from slidingpolicy_transformers.metrics import MetricsFeed, PolicyMetrics
from slidingpolicy_transformers.scheduler import Decision
from slidingpolicy_transformers.testing import Job, drive

NOW = 100.0


def _value(registry: CollectorRegistry, name: str, **labels: str) -> float:
    return registry.get_sample_value(name, labels) or 0.0


def _request(rid: str, slack: float) -> Request:
    """100 prompt tokens, nothing cached, its TTFT deadline `slack` seconds from NOW."""
    return Request(rid, NOW + slack - 2.0, 100, 0, 0, 2.0, 0.1)


def test_the_registry_holds_exactly_the_shared_metrics() -> None:
    registry = CollectorRegistry()
    PolicyMetrics(registry)
    families = {f.name: (f.type, f.documentation) for f in registry.collect()}
    assert families == {
        m.name.removesuffix("_total") if m.kind == "counter" else m.name: (m.kind, m.help)
        for m in METRICS
    }


def test_a_feed_adds_what_each_step_shows() -> None:
    registry = CollectorRegistry()
    feed = MetricsFeed(PolicyMetrics(registry))
    policy = by_name("slidingserve+", default_predictor())
    state = SchedulerState(NOW, (_request("late", -1.5), _request("fresh", 0.5)), 8000.0)
    allocations = (Allocation("late", 10), Allocation("fresh", 10))
    plan = BatchPlan(
        allocations, PlanBranch.CHUNKER, "slidingserve+", 20, 0.04, Diagnostics(margin=1.5)
    )
    faults: Counter[str] = Counter()
    live = {"late", "fresh"}.__contains__
    feed.decided(policy, Decision(state, plan, None), faults, live)
    feed.observed(Decision(state, plan, None), state, plan, 0.05, None)
    faults["policy raised E"] += 1
    feed.decided(policy, Decision(state, None, "policy raised E"), faults, live)
    assert _value(registry, "slidingpolicy_plans_total", path="chunker") == 1
    assert _value(registry, "slidingpolicy_fallback_steps_total", reason="policy raised E") == 1
    assert _value(registry, "slidingpolicy_faults_total", kind="policy raised E") == 1
    assert _value(registry, "slidingpolicy_latency_margin") == 1.5
    assert _value(registry, "slidingpolicy_demoted_requests_total") == 1, "once"
    assert _value(registry, "slidingpolicy_step_time_ratio_sum") == pytest.approx(1.25)
    assert _value(registry, "slidingpolicy_late_start_seconds_sum") == pytest.approx(1.5)


def test_the_scheduler_feeds_the_process_metrics(model_dir: Path) -> None:
    names = [
        ("slidingpolicy_plans_total", {"path": "chunker"}),
        ("slidingpolicy_step_seconds_count", {}),
        ("slidingpolicy_demoted_requests_total", {}),
        ("slidingpolicy_late_start_seconds_count", {}),
    ]
    before = {name: _value(REGISTRY, name, **labels) for name, labels in names}
    engine = Engine(EngineSettings(model_dir, "slidingserve+", {}, num_blocks=256))
    # a TTFT SLO of 1 µs: late by the first snapshot that holds it
    jobs = [Job(prompt=40, output=3, arrive=0.01 * i, slo={"ttft_slo": 1e-3}) for i in range(4)]
    assert drive(engine, jobs) == {f"r{i}": 3 for i in range(4)}
    added = {name: _value(REGISTRY, name, **labels) - before[name] for name, labels in names}
    scheduler = engine.binding.scheduler if engine.binding else None
    assert scheduler is not None
    assert 0 < added["slidingpolicy_plans_total"] <= scheduler.sliding_steps
    assert 0 < added["slidingpolicy_step_seconds_count"] <= scheduler.sliding_steps
    assert added["slidingpolicy_demoted_requests_total"] == 4
    assert added["slidingpolicy_late_start_seconds_count"] == 4
