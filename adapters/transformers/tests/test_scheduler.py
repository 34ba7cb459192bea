"""The policy steers the real engine: every request finishes with what it asked, each step
runs the plan's chunks, the steps are traced with their measured times and observed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from slidingpolicy import names
from slidingpolicy.invariants import check_plan
from slidingpolicy.step_trace import parse_step

from slidingpolicy_transformers.engine import Engine, EngineSettings
from slidingpolicy_transformers.testing import Job, drive

WORKLOAD = [Job(prompt=40 + 90 * i, output=4 + i % 3, arrive=0.01 * i) for i in range(8)]


def _engine(model_dir: Path, arm: str, trace: Path | None = None) -> Engine:
    adapter = {"ttft_slo": 5.0, "tbt_slo": 1.0}
    if trace is not None:
        adapter["trace"] = str(trace)  # type: ignore[assignment]
    return Engine(EngineSettings(model_dir, arm, adapter, num_blocks=256))


@pytest.mark.parametrize("arm", ["slidingserve+", "sarathi-edf[token_budget=128]", "qoserve"])
def test_every_request_finishes_with_what_it_asked(model_dir: Path, arm: str) -> None:
    engine = _engine(model_dir, arm)
    done = drive(engine, WORKLOAD)
    assert done == {f"r{i}": job.output for i, job in enumerate(WORKLOAD)}
    scheduler = engine.binding.scheduler if engine.binding else None
    assert scheduler is not None
    assert scheduler.sliding.faults == {}
    assert scheduler.sliding.steps > 0


def test_every_registered_policy_runs_on_the_engine(model_dir: Path) -> None:
    jobs = WORKLOAD[:4]
    for name in names():
        options = "[token_budget=256]" if name == "vllm" else ""
        engine = _engine(model_dir, name + options)
        assert drive(engine, jobs) == {f"r{i}": j.output for i, j in enumerate(jobs)}, name
        assert engine.binding is not None
        assert engine.binding.scheduler is not None
        assert engine.binding.scheduler.sliding.faults == {}, name


@pytest.mark.parametrize("arm", ["native", "prefill_first"])
def test_the_engines_own_schedulers_are_arms_too(model_dir: Path, arm: str) -> None:
    engine = _engine(model_dir, arm)
    assert engine.binding is None
    assert drive(engine, WORKLOAD) == {f"r{i}": j.output for i, j in enumerate(WORKLOAD)}


def test_each_step_runs_the_plan_and_is_traced_with_its_time(
    model_dir: Path, tmp_path: Path
) -> None:
    trace = tmp_path / "trace.jsonl"
    engine = _engine(model_dir, "slidingserve+[max_batch_tokens=128]", trace)
    drive(engine, WORKLOAD)
    steps = [parse_step(line) for line in trace.read_text().splitlines()]
    assert steps
    assert all(s.fallback is None and s.plan is not None for s in steps)
    scheduler = engine.binding.scheduler if engine.binding else None
    assert scheduler is not None
    assert len(steps) == scheduler.sliding.steps
    chunked = 0
    for step in steps:
        assert step.plan is not None
        assert step.scheduled is not None
        assert check_plan(step.state, step.plan, token_budget=512) == []
        ran = {a.request_id: a.tokens for a in step.scheduled}
        assert ran == step.plan.tokens_of(), "the engine ran the plan's chunks"
        assert step.latency is not None
        assert step.latency > 0
        chunked += any(
            0 < t < step.state.request(r).remaining_prefill  # type: ignore[union-attr]
            for r, t in ran.items()
        )
    assert chunked, "some prompt was chunked"
    assert json.loads(trace.read_text().splitlines()[0])["token_budget"] == 128


def test_the_learner_observes_the_engines_steps(model_dir: Path) -> None:
    engine = _engine(model_dir, "slidingserve+")
    assert engine.binding is not None
    before = engine.binding.policy.init()
    drive(engine, WORKLOAD)
    scheduler = engine.binding.scheduler
    assert scheduler is not None
    assert scheduler.sliding.pstate != before
    assert scheduler.sliding.throughput != engine.binding.config.prefill_throughput
