"""The per-step trace is what `slidingpolicy check` reads, and it passes the invariants."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from slidingpolicy_vllm import AsyncSlidingScheduler, SlidingScheduler
from slidingpolicy_vllm.testing import make_scheduler
from tests.driver import Job, drive


def check(trace: Path) -> subprocess.CompletedProcess[str]:
    """`slidingpolicy check TRACE`, with the console script beside this Python."""
    command = shutil.which("slidingpolicy", path=str(Path(sys.executable).parent))
    assert command is not None
    return subprocess.run([command, "check", str(trace)], capture_output=True, text=True)


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
    done = check(trace)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{len(lines)} plans checked: 0 break an invariant" in done.stdout


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
