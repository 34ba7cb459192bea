"""The per-step trace is what `slidingpolicy check` reads, and it passes the invariants; each
line carries the step's measured latency, the one the policy observed."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import attrs
import pytest
from slidingpolicy import BatchPlan, SchedulerState
from slidingpolicy.testing import Faulty

from slidingpolicy_vllm import AsyncSlidingScheduler, SlidingScheduler
from slidingpolicy_vllm.testing import make_request, make_scheduler, model_output
from tests.driver import Job, drive

WORKLOAD = [Job(prompt=40 + 30 * i, output=6, arrive=2 * i) for i in range(6)]


def check(trace: Path) -> subprocess.CompletedProcess[str]:
    """`slidingpolicy check TRACE`, with the console script beside this Python."""
    command = shutil.which("slidingpolicy", path=str(Path(sys.executable).parent))
    assert command is not None
    return subprocess.run([command, "check", str(trace)], capture_output=True, text=True)


def read_once(trace: Path) -> tuple[Path, list[dict[str, Any]]]:
    """A copy of a live server's `trace` as it is now, and its lines: the server may append a
    step (a health check's) at any time, so the lines counted and the file checked must be
    one read."""
    copy = trace.with_name(f"{trace.stem}-read.jsonl")
    copy.write_text(trace.read_text())
    return copy, [json.loads(line) for line in copy.read_text().splitlines()]


@pytest.mark.parametrize("cls", [SlidingScheduler, AsyncSlidingScheduler])
def test_the_trace_has_a_line_per_step_and_passes_check(
    model_dir: Path, tmp_path: Path, cls: type[SlidingScheduler]
) -> None:
    trace = tmp_path / "trace.jsonl"
    config = {"slidingpolicy": {"policy": "slidingserve", "trace": str(trace)}}
    scheduler = make_scheduler(cls, model_dir, num_blocks=64, additional_config=config)
    assert isinstance(scheduler, SlidingScheduler)
    steps = []
    workload = [Job(prompt=30 * (i + 1), output=5, arrive=i) for i in range(8)]
    drive(
        scheduler,
        workload,
        asynchronous=cls is AsyncSlidingScheduler,
        check=lambda s, b, out: steps.append(dict(out.num_scheduled_tokens)),
    )
    scheduler.shutdown()
    lines = [json.loads(line) for line in trace.read_text().splitlines()]
    assert [line["scheduled"] for line in lines] == steps
    assert all(line["fallback"] is None for line in lines)
    assert all(line["latency"] > 0 for line in lines), "every step ran and was measured"
    done = check(trace)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{len(lines)} plans checked: 0 break an invariant" in done.stdout


@attrs.frozen
class Observed:
    """The configured policy, keeping every latency it is given to observe."""

    inner: Any
    latencies: list[float] = attrs.field(factory=list)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def observe(self, pstate: Any, state: SchedulerState, plan: BatchPlan, latency: float) -> Any:
        self.latencies.append(latency)
        return self.inner.observe(pstate, state, plan, latency)


@pytest.mark.parametrize("cls", [SlidingScheduler, AsyncSlidingScheduler])
def test_a_line_s_latency_is_the_one_the_policy_observes(
    model_dir: Path, tmp_path: Path, cls: type[SlidingScheduler]
) -> None:
    trace = tmp_path / "trace.jsonl"
    config = {"slidingpolicy": {"trace": str(trace)}}
    scheduler = make_scheduler(cls, model_dir, num_blocks=64, additional_config=config)
    assert isinstance(scheduler, SlidingScheduler)
    policy = scheduler.sliding.policy = Observed(scheduler.sliding.policy)
    workload = [Job(prompt=40 * (i + 1), output=4, arrive=i) for i in range(6)]
    drive(scheduler, workload, asynchronous=cls is AsyncSlidingScheduler)
    scheduler.shutdown()
    lines = [json.loads(line) for line in trace.read_text().splitlines()]
    ran = [line["latency"] for line in lines if line["scheduled"]]
    assert ran == policy.latencies
    assert len(ran) > 6


def test_a_step_whose_output_never_came_is_traced_at_shutdown_with_latency_null(
    model_dir: Path, tmp_path: Path
) -> None:
    trace = tmp_path / "trace.jsonl"
    config = {"slidingpolicy": {"trace": str(trace)}}
    scheduler = make_scheduler(SlidingScheduler, model_dir, num_blocks=64, additional_config=config)
    scheduler.add_request(make_request("a", 40, 3, time.time()))
    first = scheduler.schedule()
    scheduler.update_from_output(first, model_output(scheduler, first))
    scheduler.schedule()
    assert len(trace.read_text().splitlines()) == 1, "written when the output arrives"
    scheduler.shutdown()
    lines = [json.loads(line) for line in trace.read_text().splitlines()]
    assert [line["scheduled"] for line in lines] == [{"a": 40}, {"a": 1}]
    assert lines[0]["latency"] > 0
    assert lines[1]["latency"] is None


def test_steps_vllm_scheduled_itself_are_traced_and_check_skips_those_without_a_plan(
    model_dir: Path, tmp_path: Path
) -> None:
    trace = tmp_path / "trace.jsonl"
    config = {"slidingpolicy": {"trace": str(trace)}}
    scheduler = make_scheduler(SlidingScheduler, model_dir, num_blocks=64, additional_config=config)
    assert isinstance(scheduler, SlidingScheduler)
    scheduler.sliding.policy = Faulty(scheduler.sliding.policy, 3, "raise")
    drive(scheduler, WORKLOAD, asynchronous=False)
    scheduler.shutdown()
    lines = [json.loads(line) for line in trace.read_text().splitlines()]
    fallbacks = [line for line in lines if line["plan"] is None]
    assert {line["fallback"] for line in fallbacks} == {"policy raised ZeroDivisionError"}
    assert len(fallbacks) == scheduler.sliding.faults["policy raised ZeroDivisionError"]
    assert all(line["latency"] > 0 for line in fallbacks if line["scheduled"])
    done = check(trace)
    assert done.returncode == 0, done.stdout + done.stderr
    planned = len(lines) - len(fallbacks)
    assert f"{planned} plans checked: 0 break an invariant" in done.stdout
    assert f"{len(fallbacks)} steps without a plan" in done.stdout


def test_check_reports_an_invalid_plan_in_the_trace(tmp_path: Path) -> None:
    trace = tmp_path / "bad.jsonl"
    state = {
        "now": 1.0,
        "prefill_throughput": 1000.0,
        "kv_free_tokens": None,
        "requests": [
            {
                "id": "a",
                "arrival": 0.0,
                "prompt_tokens": 4,
                "prefilled": 4,
                "generated": 1,
                "ttft_slo": 3.0,
                "tbt_slo": 0.1,
                "protected": False,
                "max_new_tokens": None,
            }
        ],
    }
    plan = {
        "allocations": [["a", 2]],
        "path": "vllm",
        "prefill_budget": 0,
        "predicted_latency": 0.0,
        "diagnostics": {},
        "preempted": [],
        "deferred": [],
    }
    line = {"state": state, "plan": plan, "token_budget": 8, "scheduled": {}, "fallback": "x"}
    trace.write_text(json.dumps(line) + "\n")
    assert check(trace).returncode == 1
