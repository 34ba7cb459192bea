"""bench/gpu_transformers.sh without a GPU: its dry run (the plan, the wheels and their size),
its one-line refusals, and the summary it writes (bench/gpu_summary.py). The run itself, on
the CPU (--smoke), is tested with the transformers adapter (adapters/transformers/tests)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"
SCRIPT = BENCH / "gpu_transformers.sh"


def _script(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "PYTHONPATH": str(BENCH.parent), **(env or {})}
    return subprocess.run(
        ["bash", str(SCRIPT), "--python", sys.executable, *args],
        capture_output=True,
        text=True,
        env=environ,
        timeout=60,
    )


def _wheels(folder: Path, sizes: dict[str, int]) -> Path:
    folder.mkdir()
    for name, size in sizes.items():
        with (folder / name).open("wb") as handle:
            handle.truncate(size)  # sparse: no disk used
    return folder


def test_the_dry_run_prints_the_grid_the_replay_and_the_wheels(tmp_path: Path) -> None:
    wheels = _wheels(tmp_path / "w", {"slidingpolicy-0.1.0-py3-none-any.whl": 300 * 1024})
    out = tmp_path / "out"
    done = _script("--dry-run", "--out", str(out), "--wheels", str(wheels), "--rates", "5,10")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert any(line.startswith("grid: 54 cells of 6 steps") for line in lines)
    grid = next(shlex.split(line) for line in lines if " slidingpolicy_transformers grid " in line)
    assert grid[grid.index("--chunks") + 1] == "0,64,128,136,256,264,384,512,520,1024,2048"
    assert grid[grid.index("--batches") + 1] == "0,16,64"
    assert grid[grid.index("--contexts") + 1] == "512,2048"
    assert (grid[grid.index("--device") + 1], grid[grid.index("--dtype") + 1]) == (
        "cuda",
        "bfloat16",
    )
    replay = next(shlex.split(line) for line in lines if " replay --launch transformers " in line)
    assert replay[replay.index("--shape") + 1] == "qwen2.5-7b"
    assert replay[replay.index("--policies") + 1] == "native,sarathi-edf,slidingserve+"
    assert replay[replay.index("--rates") + 1] == "5,10"
    assert replay[replay.index("--predictor") + 1] == "WORK/grid/predictor.json"
    assert "--server-arg=--device=cuda" in replay
    assert any(line.split()[:2] == ["slidingpolicy-0.1.0-py3-none-any.whl", "300"] for line in
               (s.strip() for s in lines))  # fmt: skip
    assert "of 64 MiB" in lines[-1]
    assert not out.exists(), "a dry run writes nothing"


def test_the_dry_run_refuses_wheels_past_64_mib_in_one_line(tmp_path: Path) -> None:
    wheels = _wheels(tmp_path / "w", {"torch-2.11.0-cp312-cp312-linux_x86_64.whl": 65 << 20})
    done = _script("--dry-run", "--wheels", str(wheels))
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert "more than 64 MiB" in done.stderr


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (("-n", "x"), "-n x"),
        (("--rates", "fast"), "--rates fast"),
        (("--rates", "0,5"), "must be > 0"),
        (("--budget", "200"), "too short"),
        (("--frobnicate",), "unknown argument"),
    ],
)
def test_a_bad_argument_is_refused_in_one_line(args: tuple[str, ...], match: str) -> None:
    done = _script("--dry-run", *args)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert match in done.stderr


def test_it_stops_in_one_line_without_a_gpu(tmp_path: Path) -> None:
    done = _script("--out", str(tmp_path), env={"NVIDIA_SMI": str(tmp_path / "no-such-tool")})
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert "no GPU" in done.stderr


def test_it_names_what_the_python_cannot_import_in_one_line(tmp_path: Path) -> None:
    fake = tmp_path / "nvidia-smi"
    fake.write_text("#!/bin/sh\necho 'GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0)'\n")
    fake.chmod(0o755)
    done = _script("--wheels", str(_wheels(tmp_path / "w", {})), env={"NVIDIA_SMI": str(fake)})
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert "cannot import" in done.stderr
    assert "slidingpolicy " not in done.stderr  # this one it holds


def _work(folder: Path) -> Path:
    """A work folder as a run leaves it: settings, phases, the grid's report, the replay."""
    (folder / "grid").mkdir(parents=True)
    (folder / "replay").mkdir()
    settings = {"shape": "qwen2.5-7b", "dtype": "bfloat16", "device": "cuda", "mode": "gpu",
                "arms": "native,sarathi-edf", "workload": "cpu-mixed", "rates": "15,30",
                "requests": "300", "command": "bash bench/gpu_transformers.sh"}  # fmt: skip
    (folder / "run.json").write_text(json.dumps(settings))
    (folder / "phases.tsv").write_text("grid\t95\tok\nreplay\t240\tfailed (124)\n")
    error = {"hardware": "h100", "steps": "all", "cells": 54, "median_error": -0.3,
             "median_abs_error": 0.35, "max_abs_error": 0.8}  # fmt: skip
    probe = {"chunks": "136/128", "decodes": 0, "context": 0, "measured": 1.21, "h100": 1.0}
    report = {"cells": 54, "cells_measured": 54, "ended": "done", "errors": [error],
              "tile_probes": [probe], "rows": []}  # fmt: skip
    (folder / "grid" / "report.json").write_text(json.dumps(report))
    row = {"policy": "sarathi-edf", "rate": 15.0, "attainment_median": 0.9,
           "attainment_min": 0.9, "attainment_max": 0.9, "ttft_p50": 0.2, "ttft_p99": 1.5,
           "tbt_p50": 0.031, "tbt_p99": 0.12, "token_throughput": 840.0, "failed": 0,
           "requests": 300}  # fmt: skip
    (folder / "replay" / "results.json").write_text(json.dumps({"summary": [row], "skipped": [1]}))
    return folder


def _summary(work: Path, out: Path) -> str:
    subprocess.run(
        [sys.executable, str(BENCH / "gpu_summary.py"), str(work), "--out", str(out)],
        check=True,
        timeout=60,
    )
    return (out / "summary.md").read_text()


def test_the_summary_gives_the_figures_the_docs_need(tmp_path: Path) -> None:
    page = _summary(_work(tmp_path / "work"), tmp_path / "out")
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["phases"][1] == {"phase": "replay", "seconds": 240, "status": "failed (124)"}
    assert summary["replay"]["summary"][0]["attainment_median"] == 0.9
    assert "| replay | 240 | failed (124) |" in page
    assert "| `h100` | all | 54 | -30.0% | 35.0% | 80.0% |" in page
    assert "| 136/128 | 0 | 0 | 1.21 | 1.00 |" in page
    assert (
        "| `sarathi-edf` | 15 | 0.900 (0.900–0.900) | 0.20 / 1.50 | 31 / 120 | 840 | 0/300 |"
        in page
    )
    assert "1 runs skipped" in page


def test_the_summary_says_what_did_not_run(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "phases.tsv").write_text("grid\t3\tfailed (1)\n")
    page = _summary(work, tmp_path / "out")
    assert "| grid | 3 | failed (1) |" in page
    assert "The grid did not run" in page
    assert "The replay did not run" in page
