"""Every command that simulates takes any built-in hardware name and a --predictor file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from slidingpolicy.hardware.profiled import PER_LAYER_OPS
from tests.cli.conftest import run_cli as _run

MEASURED = ["--hardware", "a100-80g-measured", "--model", "llama3-8b", "--tp", "1"]


@pytest.mark.parametrize("command", ["simulate", "capacity", "sweep"])
def test_a_bad_predictor_file_is_one_line_and_exit_2(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "p.json"
    bad.write_text("{")
    code, _, err = _run([command, "--predictor", str(bad), "--requests", "5"], capsys)
    assert code == 2
    assert len(err.strip().splitlines()) == 1
    assert "p.json" in err


@pytest.mark.slow
def test_sweep_runs_on_the_measured_a100_with_its_own_predictor(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "sweep"
    args = ["sweep", *MEASURED, "--policy", "sarathi", "--rates", "2", "-n", "20"]
    code, _, err = _run([*args, "--workers", "1", "--out", str(out)], capsys)
    assert code == 0, err
    spec = json.loads((out / "results.json").read_text())["runs"][0]["spec"]
    assert spec["hardware"]["gpu"] == "a100-80g-measured"


def test_the_measured_a100_needs_its_model(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(["simulate", "--hardware", "a100-80g-measured"], capsys)
    assert code == 2
    assert "measures 'llama3-8b' only" in err


def test_a_profile_whose_end_dips_runs_with_one_warning_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ops = len(PER_LAYER_OPS)
    rows = [f"{t},1," + ",".join([str(ms)] * ops) for t, ms in ((8, 0.2), (16, 0.3), (24, 0.25))]
    header = ["num_tokens", "num_tensor_parallel_workers"]
    header += [f"time_stats.{op}.median" for op in PER_LAYER_OPS]
    profile = tmp_path / "mlp.csv"
    profile.write_text("\n".join([",".join(header), *rows]) + "\n")
    args = ["profile", "--profile", str(profile), "--tp", "1", "--samples", "3"]
    code, _, err = _run([*args, "-o", str(tmp_path / "s.jsonl")], capsys)
    assert code == 0, err
    assert err.splitlines() == [
        f"slidingpolicy: warning: {profile} (tp 1): the last 1 of 3 points lies below an earlier "
        "one (at most 16.7%); past 24 tokens time grows from their monotone envelope (75.6 ms)"
    ]
