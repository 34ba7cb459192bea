"""Every command that simulates takes any built-in hardware name and a --predictor file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

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
