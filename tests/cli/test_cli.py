"""The command line: bad input is one line on stderr and exit code 2; the commands work."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import slidingpolicy
from tests.cli.conftest import run_cli as _run


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["simulate", "--rate", "-1"], "rate"),
        (["simulate", "--rate", "nan"], "rate"),
        (["simulate", "--requests", "0"], "requests"),
        (["simulate", "--requests", "abc"], "requests"),
        (["simulate", "--policy", "fifo"], "known: greedy, qoserve, sarathi"),
        (["simulate", "--hardware", "tpu"], "known: a100-80g, a100-80g-measured"),
        (["simulate", "--model", "gpt5"], "known:"),
        (
            ["simulate", "--workload", "chat"],
            "known: arxiv, cpu-mixed, mixed-v1, mixed-v2, sharegpt",
        ),
        (["sweep", "--rates", "1,x"], "rates"),
        (["sweep", "--rates", "1,-2"], "rates"),
        (["capacity", "--policy", "nope"], "unknown policy"),
        (["fit", "--holdout", "2"], "holdout"),
        (["check", "/no/such/log.jsonl"], "no such"),
        (["nonsense"], "No such command"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    args: list[str], needle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _run(args, capsys)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert needle in lines[0]
    assert "Traceback" not in err


def test_malformed_trace_names_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text("num_prefill_tokens,num_decode_tokens\n10,5\n-3,4\n")
    code, _, err = _run(["simulate", "--trace", str(trace), "--requests", "2"], capsys)
    assert code == 2
    assert f"{trace}:3" in err
    assert len(err.strip().splitlines()) == 1


def test_help_explains_the_commands(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(["--help"], capsys)
    assert code == 0
    for command in ("demo", "simulate", "capacity", "sweep", "profile", "fit", "check"):
        assert command in out


@pytest.mark.slow
def test_simulate_writes_results_and_a_checkable_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "plans.jsonl"
    out = tmp_path / "sim"
    args = ["simulate", "--policy", "sarathi", "-n", "20", "--log", str(log), "--out", str(out)]
    code, text, _ = _run(args, capsys)
    assert code == 0
    assert "SLO attainment" in text
    shown = " ".join(text.split())
    for latency in ("TTFT", "TPOT", "ITL", "E2E"):
        assert latency in shown
    for word in ("mean", "median", "std", "p90", "p99", "goodput"):
        assert word in shown
    assert "a gap longer than L_tbt can still meet every deadline" in shown
    first = (out / "results.json").read_text()
    assert json.loads(first)["metrics"]["requests"] == 20
    made = json.loads(first)["provenance"]
    assert made["version"] == slidingpolicy.__version__
    assert made["command"] == "slidingpolicy " + " ".join(args)
    assert made["commit"] is not None
    assert (out / "requests.csv").is_file()
    code, _, _ = _run(args, capsys)
    assert (out / "results.json").read_text() == first
    code, text, _ = _run(["check", str(log)], capsys)
    assert code == 0
    assert "0 break an invariant" in text


def test_check_reports_violations_and_malformed_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state = {
        "now": 1.0,
        "prefill_throughput": 1000.0,
        "kv_free_tokens": None,
        "requests": [
            {
                "id": "a",
                "arrival": 0.0,
                "prompt_tokens": 10,
                "prefilled": 10,
                "generated": 2,
                "ttft_slo": 1.0,
                "tbt_slo": 0.1,
            }
        ],
    }
    plan = {
        "allocations": [["a", 3]],
        "path": "vllm",
        "prefill_budget": 0,
        "predicted_latency": 0.0,
    }
    log = tmp_path / "other-engine.jsonl"
    good = json.dumps({"state": state, "plan": plan, "token_budget": 2})
    log.write_text(good + "\n{broken\n")
    code, text, err = _run(["check", str(log)], capsys)
    assert code == 3  # 1 (a plan breaks an invariant) | 2 (a line is malformed)
    assert f"{log}:1" in text
    assert "invariant 2" in text
    assert "invariant 4" in text
    assert f"{log}:2: malformed" in err


def test_profile_then_fit_reports_error_per_scenario(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    samples = tmp_path / "samples.jsonl"
    code, _, _ = _run(["profile", "--samples", "600", "--out", str(samples)], capsys)
    assert code == 0
    fitted = tmp_path / "predictor.json"
    code, text, _ = _run(["fit", "--samples", str(samples), "--out", str(fitted)], capsys)
    assert code == 0
    for scenario in ("decode", "prefill", "mixed", "all"):
        assert scenario in text
    assert "MAE" in text
    assert fitted.is_file()


def test_fit_rejects_a_malformed_samples_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    samples = tmp_path / "s.jsonl"
    samples.write_text('{"chunks": [1], "contexts": [5], "latency": 0.01}\n{"chunks": []}\n')
    code, _, err = _run(["fit", "--samples", str(samples)], capsys)
    assert code == 2
    assert f"{samples}:2" in err
