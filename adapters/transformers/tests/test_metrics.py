"""The policy's Prometheus metrics (`slidingpolicy.embedding.prometheus`) as the scheduler feeds
them while the engine runs a workload (the process's default registry, read before and
after)."""

from __future__ import annotations

from pathlib import Path

from prometheus_client import REGISTRY, CollectorRegistry

from slidingpolicy_transformers.engine import Engine, EngineSettings
from slidingpolicy_transformers.testing import Job, drive


def _value(registry: CollectorRegistry, name: str, **labels: str) -> float:
    return registry.get_sample_value(name, labels) or 0.0


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
    assert 0 < added["slidingpolicy_plans_total"] <= scheduler.sliding.steps
    assert 0 < added["slidingpolicy_step_seconds_count"] <= scheduler.sliding.steps
    assert added["slidingpolicy_demoted_requests_total"] == 4
    assert added["slidingpolicy_late_start_seconds_count"] == 4
