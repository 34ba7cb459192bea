"""The benchmarks still run and print their tables (on tiny inputs; no timing is asserted)."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path

import pytest

from slidingpolicy.policies import names

BENCH = Path(__file__).resolve().parent.parent / "bench"


def _run(script: str, *args: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, str(BENCH / script), *args],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    return done.stdout.splitlines()


def test_decision_bench_prints_all_three_tables() -> None:
    lines = _run(
        "decision.py",
        "--policy",
        "sarathi",
        "--states",
        "1",
        "--repeats",
        "1",
        "--run-requests",
        "20",
        "--overload",
        "10,30",
    )
    assert sum(line.startswith("sarathi ") for line in lines) == 18 + 1 + 2
    assert any(line.startswith("states from an engine run") for line in lines)
    start = next(i for i, line in enumerate(lines) if line.startswith("overload"))
    repeated, successive = (line.split() for line in lines[start:] if line.startswith("sarathi"))
    assert len(repeated) == 1 + 2 + 1
    assert len(repeated[-1].split("/")) == 2
    assert len(successive) == 1 + 2
    assert lines[-1].split()[0] == "sarathi"


@pytest.mark.slow
def test_engine_bench_prints_a_row_per_case() -> None:
    lines = _run("engine.py", "--requests", "20", "--skip-anchor")
    rows = [line for line in lines if " @ 1/s, " in line]
    assert len(rows) == 8
    assert all(line.split()[6] == "20" for line in rows)


@pytest.mark.parametrize(
    "arrivals", [["--arrivals", "at-once"], ["--arrivals", "steady", "--load", "2"]]
)
def test_burst_bench_prints_each_seed_and_the_mean(arrivals: list[str]) -> None:
    lines = _run(
        "burst.py", "--requests", "20", "--seeds", "2", "--policies", "vllm;sarathi", *arrivals
    )
    rows = [line.split()[0:2] for line in lines[1:]]
    assert rows == [[p, s] for p in ("vllm", "sarathi") for s in ("(0)", "(1)", "(mean)")]


def test_check_cost_bench_prints_a_row_per_policy() -> None:
    lines = _run(
        "check_cost.py",
        "--requests",
        "10",
        "--repeats",
        "1",
        "--policy",
        "vllm",
        "--policy",
        "qoserve",
    )
    rows = [line.split() for line in lines[2:]]
    assert [row[0] for row in rows] == ["vllm", "qoserve"]
    assert all(int(row[1]) > 0 for row in rows)


GPU_SCRIPT = BENCH / "gpu_real_engine.sh"


def _gpu_script(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "PYTHONPATH": str(BENCH.parent), **(env or {})}
    return subprocess.run(
        ["bash", str(GPU_SCRIPT), "--python", sys.executable, *args],
        capture_output=True,
        text=True,
        env=environ,
        timeout=120,
    )


def test_the_gpu_script_dry_run_prints_every_arm_once_then_the_fidelity_table(
    tmp_path: Path,
) -> None:
    done = _gpu_script("--dry-run", "--out", str(tmp_path), "--rates", "4,8", "-n", "50")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    replays = [shlex.split(line) for line in lines if " replay --launch vllm " in line]
    assert len(replays) == 2
    arms = [arm for words in replays for arm in words[words.index("--policies") + 1].split(",")]
    assert sorted(arms) == sorted(["native", *names()])
    for words in replays:
        assert words[words.index("--rates") + 1] == "4,8"
        assert words[words.index("-n") + 1] == "50"
        assert "--server-arg=--max-num-batched-tokens=8192" in words
        assert words[words.index("--model") + 1] == f"{tmp_path}/qwen2.5-7b"
    fidelity = shlex.split(lines[-1])
    assert fidelity[fidelity.index("replay-fidelity") + 1 :][:2] == [
        f"{tmp_path}/group-1",
        f"{tmp_path}/group-2",
    ]
    assert f"{tmp_path}/traces/sarathi-edf.jsonl" in fidelity
    assert not any(tmp_path.iterdir()), "a dry run writes nothing"


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (("-n", "x"), "-n x"),
        (("--rates", "fast"), "--rates fast"),
        (("--budget", "60"), "too short"),
        (("--frobnicate",), "unknown argument"),
    ],
)
def test_the_gpu_script_refuses_bad_arguments_in_one_line(
    args: tuple[str, ...], match: str
) -> None:
    done = _gpu_script("--dry-run", *args)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert match in done.stderr


def test_the_gpu_script_stops_in_one_line_without_a_gpu(tmp_path: Path) -> None:
    done = _gpu_script(env={"NVIDIA_SMI": str(tmp_path / "no-such-tool")})
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert "no GPU" in done.stderr


@pytest.mark.skipif(find_spec("vllm") is not None, reason="this Python holds vLLM")
def test_the_gpu_script_stops_in_one_line_without_vllm(tmp_path: Path) -> None:
    fake = tmp_path / "nvidia-smi"
    fake.write_text("#!/bin/sh\necho 'GPU 0: NVIDIA H200 (UUID: GPU-0)'\n")
    fake.chmod(0o755)
    done = _gpu_script(env={"NVIDIA_SMI": str(fake)})
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert "cannot import vllm" in done.stderr
