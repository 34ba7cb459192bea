"""Recording the batches a run executes (`runs.batches`) changes nothing about the run."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from slidingpolicy import by_name, default_predictor
from slidingpolicy.engine.simulator import simulate
from slidingpolicy.hardware import default_hardware
from slidingpolicy.runs.batches import Recording, engine_samples, recording
from slidingpolicy.runs.specs import RunSpec, WorkloadSpec
from slidingpolicy.workloads import Poisson, make_workload


@pytest.mark.parametrize("record", [recording, Recording], ids=["observing-runs", "stepping"])
def test_a_recorded_run_is_the_run_and_keeps_one_sample_per_iteration(
    record: Callable[[Any], Recording],
) -> None:
    workload = make_workload("mixed-v1", 60, Poisson(2.0), seed=3)
    plain = simulate(by_name("slidingserve", default_predictor()), workload, default_hardware(), 3)
    recorder = record(by_name("slidingserve", default_predictor()))
    recorded = simulate(recorder, workload, default_hardware(), 3)
    assert recorded.metrics == plain.metrics
    assert len(recorder.samples) == plain.metrics.iterations
    assert all(s.latency > 0 for s in recorder.samples)
    assert sum(1 for s in recorder.samples if max(s.chunks) > 1) > 0


def test_engine_samples_follow_the_spec() -> None:
    spec = RunSpec("sarathi-edf", workload=WorkloadSpec("mixed-v1", 40), seed=1).with_rate(1.0)
    again = engine_samples(spec)
    assert engine_samples(spec) == again
    assert len(again) > 40
