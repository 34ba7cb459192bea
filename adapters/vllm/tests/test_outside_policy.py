"""A policy of your own (the repository's examples/my_policy.py) inside vLLM, by its
registered name: the adapter loads it as a plugin named in its config, at the scheduler's
level and in a server that `slidingpolicy replay --launch vllm` starts."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from slidingpolicy.cli import main
from slidingpolicy.policies import plugin_loader, registry
from slidingpolicy.step_trace import parse_step
from vllm.v1.request import RequestStatus

from slidingpolicy_vllm import AsyncSlidingScheduler, SlidingScheduler
from slidingpolicy_vllm.testing import make_scheduler
from tests.driver import Job, drive

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "my_policy.py"
NAME = "shortest-first"
JOBS = [Job(prompt=40 + 97 * i % 500, output=3 + i % 5, arrive=i % 4) for i in range(10)]


@pytest.fixture(autouse=True)
def own_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """The registry and the plugins loaded as they are now, restored after the test."""
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    monkeypatch.setattr(plugin_loader, "_LOADED", set())


@pytest.mark.parametrize("cls", [SlidingScheduler, AsyncSlidingScheduler])
def test_the_scheduler_runs_a_plugins_policy_by_name(
    model_dir: Path, cls: type[SlidingScheduler]
) -> None:
    section = {"policy": f"{NAME}[token_budget=512]", "plugins": [str(EXAMPLE)]}
    scheduler = make_scheduler(
        cls, model_dir, num_blocks=96, additional_config={"slidingpolicy": section}
    )
    assert isinstance(scheduler, SlidingScheduler)
    assert (scheduler.sliding.policy.name, scheduler.sliding.policy.token_budget) == (NAME, 512)
    policies: set[str] = set()

    def planned(scheduler: SlidingScheduler, before: object, output: object) -> None:
        decision = scheduler.sliding.decision
        assert decision is not None
        assert decision.plan is not None, decision
        policies.add(decision.plan.policy)

    requests = drive(scheduler, JOBS, asynchronous=cls is AsyncSlidingScheduler, check=planned)
    assert policies == {NAME}
    assert all(r.status == RequestStatus.FINISHED_LENGTH_CAPPED for r in requests.values())
    assert not scheduler.sliding.faults


@pytest.mark.engine
@pytest.mark.e2e
def test_replay_launches_vllm_with_the_plugins_policy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SLIDINGPOLICY_VLLM_PYTHON", sys.executable)
    monkeypatch.delenv("VLLM_ENABLE_V1_MULTIPROCESSING", raising=False)
    out, traces = tmp_path / "out", tmp_path / "traces"
    args = ["replay", "--launch", "vllm", "--plugin", str(EXAMPLE),
            "--policies", NAME, "--workload", "cpu-mixed", "--rate", "4", "-n", "10",
            "--whole", "--warmup", "1", "--timeout", "120", "--start-timeout", "400",
            "--trace-dir", str(traces), "--out", str(out)]  # fmt: skip
    with pytest.raises(SystemExit) as done:
        main(args)
    captured = capsys.readouterr()
    assert done.value.code in (0, None), captured.err[-4000:]
    (run,) = json.loads((out / "results.json").read_text())["runs"]
    assert run["policy"] == NAME
    assert [r["failure"] for r in run["requests"]] == [None] * 10
    plans = [parse_step(line).plan for line in (traces / f"{NAME}.jsonl").read_text().splitlines()]
    assert {p.policy for p in plans if p is not None} == {NAME}
    with pytest.raises(SystemExit) as checked:
        main(["check", str(traces / f"{NAME}.jsonl")])
    assert checked.value.code in (0, None), capsys.readouterr().out
