"""The policy's Prometheus metrics (`slidingpolicy.embedding.prometheus`) as vLLM's scheduler
feeds them over a workload (the process's default registry, read before and after), and the
multiprocess folder `serve` gives them to reach the API server's `/metrics`."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest
from prometheus_client import REGISTRY, CollectorRegistry

from slidingpolicy_vllm import AsyncSlidingScheduler, SlidingScheduler
from slidingpolicy_vllm.__main__ import MULTIPROC_DIR, metrics_folder
from slidingpolicy_vllm.testing import make_scheduler
from tests.driver import Job, drive


def _value(registry: CollectorRegistry, name: str, **labels: str) -> float:
    return registry.get_sample_value(name, labels) or 0.0


@pytest.mark.parametrize("cls", [SlidingScheduler, AsyncSlidingScheduler])
def test_a_scheduler_feeds_the_process_metrics(
    model_dir: Path, cls: type[SlidingScheduler]
) -> None:
    names = [
        ("slidingpolicy_plans_total", {"path": "chunker"}),
        ("slidingpolicy_step_seconds_count", {}),
        ("slidingpolicy_predicted_step_seconds_count", {}),
        ("slidingpolicy_demoted_requests_total", {}),
        ("slidingpolicy_late_start_seconds_count", {}),
    ]
    before = {name: _value(REGISTRY, name, **labels) for name, labels in names}
    config = {"slidingpolicy": {"policy": "slidingserve+"}}
    scheduler = make_scheduler(cls, model_dir, num_blocks=64, max_num_seqs=2,
                               additional_config=config)  # fmt: skip
    assert isinstance(scheduler, SlidingScheduler)
    # a TTFT SLO of 1 ms, the least the door accepts, 20 ms after arriving (after the
    # scheduler was built): every request is late by the first snapshot, where all six wait
    time.sleep(0.05)
    late: dict[str, object] = {"ttft_slo": 1e-3}
    jobs = [Job(prompt=60, output=4, arrive=0, extra=late, waited=0.02) for _ in range(6)]
    steps = []
    drive(scheduler, jobs, asynchronous=cls is AsyncSlidingScheduler,
          check=lambda s, b, o: steps.append(o.total_num_scheduled_tokens))  # fmt: skip
    added = {name: _value(REGISTRY, name, **labels) - before[name] for name, labels in names}
    ran = sum(1 for tokens in steps if tokens)
    assert added["slidingpolicy_step_seconds_count"] == ran
    assert 0 < added["slidingpolicy_plans_total"] <= len(steps)
    assert added["slidingpolicy_predicted_step_seconds_count"] == ran
    assert added["slidingpolicy_demoted_requests_total"] == 6
    assert added["slidingpolicy_late_start_seconds_count"] == 6
    assert (REGISTRY.get_sample_value("slidingpolicy_latency_margin") or 0.0) >= 1.0


def test_serve_gets_a_fresh_multiprocess_folder_removed_on_exit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(MULTIPROC_DIR, raising=False)
    with metrics_folder(["serve", "model"]) as folder:
        assert folder is None, "prometheus_client is imported: too late"
    monkeypatch.delitem(sys.modules, "prometheus_client.values")
    with metrics_folder(["serve", "model"]) as folder:
        assert folder is not None
        assert os.environ[MULTIPROC_DIR] == folder
        assert Path(folder).is_dir()
    assert MULTIPROC_DIR not in os.environ
    assert not Path(folder).exists()
    with metrics_folder(["--version"]) as other:
        assert other is None
        assert MULTIPROC_DIR not in os.environ
    monkeypatch.setenv(MULTIPROC_DIR, "/somewhere")
    with metrics_folder(["serve", "model"]) as other:
        assert other is None
        assert os.environ[MULTIPROC_DIR] == "/somewhere"
