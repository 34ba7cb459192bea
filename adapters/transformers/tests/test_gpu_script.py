"""bench/gpu_transformers.sh --smoke: the GPU run's every step, on the CPU with the tiny
shape: the grid measured and fitted and set beside the hardware models, the replay of three
arms at two rates, the summary, and the archive of everything."""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[3] / "bench" / "gpu_transformers.sh"


@pytest.mark.e2e
def test_the_smoke_run_measures_replays_and_sums_up(tmp_path: Path) -> None:
    done = subprocess.run(
        ["bash", str(SCRIPT), "--smoke", "--python", sys.executable, "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:]
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert [(p["phase"], p["status"]) for p in summary["phases"]] == [
        (name, "ok") for name in ("model", "grid", "fit", "grid-report", "replay")
    ]
    assert summary["grid"]["cells_measured"] == summary["grid"]["cells"] == 8
    assert {e["hardware"] for e in summary["grid"]["errors"]} == {"h100", "h100-quantized"}
    rows = summary["replay"]["summary"]
    assert sorted((r["policy"], r["rate"]) for r in rows) == [
        (arm, rate) for arm in ("native", "sarathi-edf", "slidingserve+") for rate in (4.0, 8.0)
    ]
    assert all(r["requests"] == 8 and r["failed"] == 0 for r in rows)
    with tarfile.open(tmp_path / "gpu-transformers.tar.gz") as archive:
        names = set(archive.getnames())
    assert {"./grid/grid-trace.jsonl", "./grid/predictor.json", "./replay/results.json"} <= names
    assert "./replay/traces/slidingserve+.jsonl" in names
    assert "## Replay" in (tmp_path / "summary.md").read_text()
