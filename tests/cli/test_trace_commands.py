"""Calibrating from a step trace at the command line: `simulate --log` writes one, `check`
reads it, `fit --trace` fits it, `--hardware-trace` runs on it; bad input is one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from slidingpolicy.cli import main
from slidingpolicy.pricing import LatencyPredictor
from tests.cli.conftest import run_cli as _run

SMALL = ["--policy", "sarathi-edf", "--rate", "2", "-n", "30"]


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The step trace of a short `simulate --log` run on the default hardware."""
    folder = tmp_path_factory.mktemp("trace")
    path = folder / "steps.jsonl"
    with pytest.raises(SystemExit) as done:
        main(["simulate", *SMALL, "--log", str(path), "-o", str(folder / "run")])
    assert done.value.code in (0, None)
    return path


def test_check_reads_the_step_trace_of_simulate(
    trace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(["check", str(trace)], capsys)
    assert code == 0, err
    flat = " ".join(out.split())
    assert "0 break an invariant, 0 malformed lines" in flat
    assert "steps without a plan (scheduled by the engine itself)" in flat


def test_fit_trace_writes_the_engines_predictor_and_its_held_out_error(
    trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_file = tmp_path / "engine.json"
    code, out, err = _run(["fit", "--trace", str(trace), "-o", str(out_file)], capsys)
    assert code == 0, err
    assert "held-out error" in out
    assert "latency margin" in out
    predictor = LatencyPredictor.load(out_file)
    assert predictor.source == str(trace)
    assert predictor.margin >= 1.0


def test_fit_takes_several_traces(
    trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = trace.read_text().splitlines()
    steps = len(lines)
    code, out, _ = _run(["fit", "--trace", str(trace), "--trace", str(trace)], capsys)
    assert code == 0
    assert f"of {2 * steps} samples" in " ".join(out.split())


def test_a_malformed_trace_is_one_line_naming_file_and_line(
    trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.jsonl"
    first = trace.read_text().splitlines()[0]
    document = json.loads(first)
    document["latency"] = -1.0
    bad.write_text(first + "\n" + json.dumps(document) + "\n")
    for command in (["fit", "--trace"], ["simulate", "-n", "5", "--hardware-trace"]):
        code, _, err = _run([*command, str(bad), "-o", str(tmp_path / "x")], capsys)
        assert code == 2
        assert len(err.strip().splitlines()) == 1
        assert f"{bad}:2: latency: must be null or seconds >= 0" in err


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["fit", "--samples", "s.jsonl", "--trace", "t.jsonl"], "give --samples or --trace"),
        (["fit", "--trace", "absent.jsonl"], "no such file"),
        (["simulate", "--hardware-trace", "absent.jsonl"], "no such file"),
        (["simulate", "--kv-tokens", "8"], "--kv-tokens"),
    ],
)
def test_bad_trace_arguments_are_one_line(
    args: list[str], needle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _run(args, capsys)
    assert code == 2
    assert needle in err


def test_a_trace_and_a_profile_are_refused_together(
    trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["simulate", "--hardware-trace", str(trace), "--profile", str(trace)]
    code, _, err = _run([*args, "-o", str(tmp_path)], capsys)
    assert code == 2
    assert "profile CSV cannot replace part of it" in err


def test_simulate_runs_on_the_traced_engine(
    trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    args = ["simulate", *SMALL, "--hardware-trace", str(trace), "--kv-tokens", "40000"]
    code, _, err = _run([*args, "-o", str(out)], capsys)
    assert code == 0, err
    spec = json.loads((out / "results.json").read_text())["spec"]
    assert spec["hardware"]["trace"] == [str(trace)]
    assert spec["engine"]["kv_capacity_tokens"] == 40000


def test_a_kv_cache_too_small_for_a_request_is_one_line(
    trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["simulate", *SMALL, "--hardware-trace", str(trace), "--kv-tokens", "64"]
    code, _, err = _run([*args, "-o", str(tmp_path)], capsys)
    assert code == 2
    assert "exceed the KV capacity 64" in err


@pytest.mark.parametrize("command", ["sweep", "capacity"])
def test_sweep_and_capacity_run_on_the_traced_engine(
    command: str, trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rates = ["--rates", "2"] if command == "sweep" else ["--seeds", "1", "--start", "2"]
    args = [command, "-p", "sarathi-edf", "-n", "20", *rates, "--workers", "1"]
    code, out, err = _run([*args, "--hardware-trace", str(trace), "-o", str(tmp_path)], capsys)
    assert code == 0, err
    assert str(trace) in (tmp_path / "results.json").read_text()
    if command == "capacity":
        assert "trace:steps.jsonl" in " ".join(out.split())
