"""`slidingpolicy replay` end to end against fake engines: its files in `simulate`'s formats,
launched servers stopped whatever happens, and each bad input one clear line with exit 2."""

from __future__ import annotations

import csv
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from slidingpolicy.runs.results import METRIC_COLUMNS
from tests.cli.conftest import run_cli
from tests.replay.conftest import Start
from tests.replay.fake_engine import Behaviour
from tests.replay.test_client import closed_port
from tests.replay.test_launcher import FAKE, alive

Capture = pytest.CaptureFixture[str]


def one_line_error(code: int, err: str, match: str) -> None:
    assert code == 2
    assert err.count("\n") == 1, err
    assert match in err


@pytest.mark.slow
def test_a_url_replay_writes_every_run_in_simulates_columns(
    fake_engine: Start, tmp_path: Path, capsys: Capture
) -> None:
    # finite trials, every request counted: the steady-state window has its own test below
    engine = fake_engine(lambda body: Behaviour())
    out = tmp_path / "out"
    args = ["replay", "--url", engine.url, "--rates", "40,80", "-n", "12", "--seeds", "2",
            "--repeats", "2", "--label", "fake", "--out", str(out), "--whole"]  # fmt: skip
    code, stdout, err = run_cli(args, capsys)
    assert code == 0, err
    document = json.loads((out / "results.json").read_text())
    assert document["command"][1:] == args
    assert document["settings"]["requests"] == 12
    assert len(document["runs"]) == 2 * 2 * 2
    run = document["runs"][0]
    assert run["metrics"]["attainment"] == 1.0
    assert run["metrics"]["preemptions"] is None
    assert run["metrics"]["iterations"] is None
    assert len(run["requests"]) == 12
    with (out / "runs.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 8
    assert set(METRIC_COLUMNS) <= set(rows[0])
    summary = document["summary"]
    assert [(s["policy"], s["rate"], s["runs"]) for s in summary] == [
        ("fake", 40.0, 4),
        ("fake", 80.0, 4),
    ]
    assert (out / "replay.png").stat().st_size > 0
    assert (out / "requests.csv").stat().st_size > 0
    assert "fake" in stdout
    assert "(100.0–" in stdout


def test_failed_requests_are_counted_as_misses_by_reason(
    fake_engine: Start, tmp_path: Path, capsys: Capture
) -> None:
    calls = {"n": 0}

    def every_other_fails(body: dict[str, object]) -> Behaviour:
        calls["n"] += 1
        probe = body["max_tokens"] == 2
        return Behaviour(status=200 if probe or calls["n"] % 2 else 503)

    engine = fake_engine(every_other_fails)
    out = tmp_path / "out"
    code, _, err = run_cli(
        [
            "replay",
            "--url",
            engine.url,
            "--rate",
            "50",
            "-n",
            "10",
            "--warmup",
            "0",
            "--whole",
            "--out",
            str(out),
        ],
        capsys,
    )
    assert code == 0, err
    run = json.loads((out / "results.json").read_text())["runs"][0]
    assert run["window"] is None
    failed = sum(run["failures"].values())
    assert set(run["failures"]) == {"http 503"}
    assert failed >= 4
    assert run["metrics"]["attainment"] == (10 - failed) / 10
    assert sum(r["failure"] == "http 503" for r in run["requests"]) == failed


def test_a_replay_is_a_steady_state_trial_that_reports_its_window(
    fake_engine: Start, tmp_path: Path, capsys: Capture
) -> None:
    """SLOs scaled to a twentieth, so that the warm-up (40 shortest TTFTs: 2 s) is short: the
    10 counted requests arrive after the warm-up's 40, and only they are judged."""
    engine = fake_engine(lambda body: Behaviour())
    out = tmp_path / "out"
    args = ["replay", "--url", engine.url, "--rate", "20", "-n", "10", "--slo-scale", "0.05",
            "--warmup", "0", "--out", str(out)]  # fmt: skip
    code, _, err = run_cli(args, capsys)
    assert code == 0, err
    run = json.loads((out / "results.json").read_text())["runs"][0]
    assert run["window"]["first"] == 40
    assert run["window"]["count"] == 10
    assert run["metrics"]["requests"] == 10
    assert run["workload"]["whole"] is False
    counted = [r for r in run["requests"] if r["counted"]]
    assert [r["id"] for r in counted] == [f"r{i}" for i in range(10)]
    assert len(engine.bodies) >= 50


def test_a_steady_state_trial_too_large_to_send_is_one_line(
    tmp_path: Path, capsys: Capture
) -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    args = ["replay", "--url", url, "--rate", "5000", "-n", "10", "--out", str(tmp_path)]
    code, _, err = run_cli(args, capsys)
    one_line_error(code, err, "--rate 5000: a steady-state trial of 10 requests sends")


def test_an_unreachable_url_is_one_line(tmp_path: Path, capsys: Capture) -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    code, _, err = run_cli(["replay", "--url", url, "--rate", "1", "--out", str(tmp_path)], capsys)
    one_line_error(code, err, f"cannot reach {url}")


def test_a_server_answering_500_is_one_line(
    fake_engine: Start, tmp_path: Path, capsys: Capture
) -> None:
    engine = fake_engine(lambda body: Behaviour(status=500))
    args = ["replay", "--url", engine.url, "--rate", "1", "--out", str(tmp_path)]
    code, _, err = run_cli(args, capsys)
    one_line_error(code, err, "answered HTTP 500 to a test completion")


def test_a_trace_without_times_needs_a_rate(tmp_path: Path, capsys: Capture) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text("num_prefill_tokens,num_decode_tokens\n100,10\n200,20\n")
    args = ["replay", "--url", "http://127.0.0.1:1", "--trace", str(trace), "-n", "2"]
    code, _, err = run_cli([*args, "--out", str(tmp_path)], capsys)
    one_line_error(code, err, "records no arrival times: give --rate or --rates")


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (["--url", "http://10.1.2.3:8000", "--rate", "1"], "not a loopback address"),
        (["--url", "ftp://127.0.0.1", "--rate", "1"], "expected http://HOST:PORT"),
        (["--url", "http://127.0.0.1:1"], "needs --rate or --rates"),
        (["--url", "http://127.0.0.1:1", "--rate", "1", "--rates", "1,2"], "not both"),
        (["--rate", "1"], "either --url"),
        (["--url", "http://127.0.0.1:1", "--launch", "vllm", "--rate", "1"], "either --url"),
        (["--launch", "sglang", "--rate", "1"], "can launch are 'vllm' or 'transformers'"),
        (["--launch", "transformers", "-p", "fcfs", "--rate", "1"], "prefill_first"),
        (["--url", "http://127.0.0.1:1", "--rate", "1", "-n", "0"], "--requests=0"),
        (["--url", "http://127.0.0.1:1", "--rate", "1", "--timeout", "0"], "--timeout=0"),
        (["--url", "http://127.0.0.1:1", "--rate", "1", "--workload", "x"], "unknown workload"),
    ],
)
def test_bad_arguments_are_one_line(
    args: list[str], match: str, tmp_path: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SLIDINGPOLICY_VLLM_PYTHON", raising=False)
    monkeypatch.delenv("SLIDINGPOLICY_TRANSFORMERS_PYTHON", raising=False)
    code, _, err = run_cli(["replay", *args, "--out", str(tmp_path)], capsys)
    one_line_error(code, err, match)


@pytest.mark.parametrize("engine", ["vllm", "transformers"])
def test_launch_without_an_engine_python_says_how_to_set_it(
    engine: str, tmp_path: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    variable = f"SLIDINGPOLICY_{engine.upper()}_PYTHON"
    monkeypatch.delenv(variable, raising=False)
    args = ["replay", "--launch", engine, "--rate", "1", "--out", str(tmp_path)]
    code, _, err = run_cli(args, capsys)
    one_line_error(code, err, f"pass --{engine}-python PATH or set {variable}")


ADAPTERS = ("slidingpolicy_vllm", "slidingpolicy_transformers")


def fake_python(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    env: dict[str, str] | None = None,
    adapters: tuple[str, ...] = ADAPTERS,
) -> Path:
    """A 'python' that runs the fake engine in place of `-m ADAPTER serve` (with `env` set),
    and in which the `adapters` (empty stand-in packages) can be found."""
    stubs = tmp_path / "stubs"
    for package in adapters:
        (stubs / package).mkdir(parents=True)
        (stubs / package / "__init__.py").write_text("")
    script = tmp_path / "python"
    script.write_text(
        f'#!/bin/sh\nif [ "$1" = -c ]; then PYTHONPATH={stubs} exec {sys.executable} "$@"; fi\n'
        f'exec {sys.executable} {FAKE} "$@"\n'
    )
    script.chmod(0o755)
    monkeypatch.setenv("FAKE_ENGINE_DIR", str(tmp_path))
    for key, value in (env or {}).items():
        monkeypatch.setenv(key, value)
    return script


def launched(tmp_path: Path) -> list[tuple[list[str], list[int]]]:
    """Each fake server's argv and pids (its own and its child's; none if it exited at once)."""
    found = []
    for argv in sorted(tmp_path.glob("*.argv")):
        pids = argv.with_suffix(".pids")
        listed = [int(p) for p in pids.read_text().split()] if pids.exists() else []
        found.append((json.loads(argv.read_text()), listed))
    return found


@pytest.mark.slow
def test_launch_starts_one_server_per_arm_and_stops_them_all(
    tmp_path: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    python = fake_python(tmp_path, monkeypatch)
    out = tmp_path / "out"
    code, _, err = run_cli(
        [
            "replay",
            "--launch",
            "vllm",
            "--vllm-python",
            str(python),
            "--policies",
            "native,sarathi-edf[token_budget=256]",
            "--rates",
            "50,100",
            "-n",
            "6",
            "--whole",
            "--trace-dir",
            str(tmp_path / "traces"),
            "--out",
            str(out),
        ],
        capsys,
    )
    assert code == 0, err
    servers = launched(tmp_path)
    assert len(servers) == 2
    for argv, pids in servers:
        assert not any(alive(p) for p in pids)
        if "--scheduler-cls" in argv:
            config = json.loads(argv[argv.index("--additional-config") + 1])["slidingpolicy"]
            assert config["policy"] == "sarathi-edf"
            assert config["trace"].endswith("sarathi-edf_token_budget_256_.jsonl")
    document = json.loads((out / "results.json").read_text())
    assert [r["policy"] for r in document["runs"]] == [
        "native", "sarathi-edf[token_budget=256]", "sarathi-edf[token_budget=256]", "native",
    ]  # fmt: skip
    assert [t["starts"] for t in document["targets"]] == [1, 1]
    assert all(t["ready_seconds"] > 0 for t in document["targets"])
    assert all(t["memory_peak_bytes"] > 0 for t in document["targets"])


@pytest.mark.slow
def test_launch_transformers_serves_every_arm_through_its_adapter(
    tmp_path: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SLIDINGPOLICY_TRANSFORMERS_PYTHON", raising=False)
    python = fake_python(tmp_path, monkeypatch)
    out = tmp_path / "out"
    args = ["replay", "--launch", "transformers", "--transformers-python", str(python),
            "--policies", "native,prefill_first,sarathi-edf[token_budget=256]", "--rate", "50",
            "-n", "4", "--whole", "--trace-dir", str(tmp_path / "traces"),
            "--out", str(out)]  # fmt: skip
    code, _, err = run_cli(args, capsys)
    assert code == 0, err
    servers = launched(tmp_path)
    arms = {}
    for argv, pids in servers:
        assert not any(alive(p) for p in pids)
        assert argv[:3] == ["-m", "slidingpolicy_transformers", "serve"]
        assert argv[argv.index("--served-model-name") + 1] == "qwen2-small"
        config = argv[argv.index("--adapter-config") + 1] if "--adapter-config" in argv else None
        arms[argv[argv.index("--arm") + 1]] = (argv[argv.index("--max-batch-tokens") + 1], config)
    assert arms == {
        "native": ("512", None),
        "prefill_first": ("512", None),
        "sarathi-edf[token_budget=256]": (
            "256",
            json.dumps({"trace": str(tmp_path / "traces" / "sarathi-edf_token_budget_256_.jsonl")}),
        ),
    }
    document = json.loads((out / "results.json").read_text())
    assert sorted(r["policy"] for r in document["runs"]) == sorted(arms)
    assert all("--max-batch-tokens" in t["command"] for t in document["targets"])


@pytest.mark.parametrize("engine", ["vllm", "transformers"])
def test_an_engine_python_without_the_adapter_is_one_line(
    engine: str, tmp_path: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    adapter = f"slidingpolicy_{engine}"
    others = tuple(a for a in ADAPTERS if a != adapter)
    python = fake_python(tmp_path, monkeypatch, adapters=others)
    args = ["replay", "--launch", engine, f"--{engine}-python", str(python), "--rate", "1",
            "--out", str(tmp_path / "out")]  # fmt: skip
    code, _, err = run_cli(args, capsys)
    one_line_error(code, err, f"--{engine}-python {python}: cannot import {adapter}")
    assert launched(tmp_path) == []


@pytest.mark.slow
def test_restarting_servers_starts_one_per_run(
    tmp_path: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    python = fake_python(tmp_path, monkeypatch)
    out = tmp_path / "out"
    code, _, err = run_cli(
        [
            "replay",
            "--launch",
            "vllm",
            "--vllm-python",
            str(python),
            "--policies",
            "native",
            "--rates",
            "50,100",
            "-n",
            "4",
            "--whole",
            "--restart-servers",
            "--out",
            str(out),
        ],
        capsys,
    )
    assert code == 0, err
    document = json.loads((out / "results.json").read_text())
    assert document["targets"][0]["starts"] == 2
    for _, pids in launched(tmp_path):
        assert not any(alive(p) for p in pids)


@pytest.mark.parametrize(
    ("env", "match"),
    [
        ({"FAKE_ENGINE_STATUS": "500"}, "answered HTTP 500"),
        ({"FAKE_ENGINE_EXIT": "3"}, "exited (code 3) before it was ready"),
    ],
)
def test_a_launched_run_that_fails_stops_every_server_and_says_why(
    env: dict[str, str],
    match: str,
    tmp_path: Path,
    capsys: Capture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    python = fake_python(tmp_path, monkeypatch, env)
    code, _, err = run_cli(
        [
            "replay",
            "--launch",
            "vllm",
            "--vllm-python",
            str(python),
            "--policies",
            "native,sarathi-edf",
            "--rate",
            "50",
            "-n",
            "4",
            "--out",
            str(tmp_path / "out"),
        ],
        capsys,
    )
    one_line_error(code, err, match)
    servers = launched(tmp_path)
    assert servers
    for _, pids in servers:
        assert not any(alive(p) for p in pids)


def test_a_trace_is_replayed_at_its_recorded_times(
    fake_engine: Start, tmp_path: Path, capsys: Capture
) -> None:
    engine = fake_engine(lambda body: Behaviour())
    trace = tmp_path / "t.csv"
    trace.write_text(
        "num_prefill_tokens,num_decode_tokens,arrived_at\n100,3,0.0\n50,2,0.25\n80,4,0.5\n"
    )
    out = tmp_path / "out"
    args = ["replay", "--url", engine.url, "--trace", str(trace), "-n", "3", "--out", str(out)]
    code, stdout, err = run_cli(args, capsys)
    assert code == 0, err
    run = json.loads((out / "results.json").read_text())["runs"][0]
    assert run["rate"] is None
    assert [r["arrival"] for r in run["requests"]] == [0.0, 0.25, 0.5]
    assert [r["prompt_tokens"] for r in run["requests"]] == [100, 50, 80]
    assert [r["sent"] >= r["arrival"] for r in run["requests"]] == [True] * 3
    assert "recorded" in stdout


def test_without_aiohttp_replay_says_which_extra_to_install(
    tmp_path: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "aiohttp" else real(name, *a)
    )
    args = ["replay", "--url", "http://127.0.0.1:1", "--rate", "1", "--out", str(tmp_path)]
    code, _, err = run_cli(args, capsys)
    one_line_error(code, err, "pip install 'slidingpolicy[replay]'")


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_launch_stops_every_server(
    sig: signal.Signals, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    python = fake_python(tmp_path, monkeypatch)
    out = str(tmp_path / "out")
    args = ["replay", "--launch", "vllm", "--vllm-python", str(python), "--policies",
            "native,sarathi-edf", "--rate", "0.2", "-n", "50", "--out", out]  # fmt: skip
    command = [sys.executable, "-c", "from slidingpolicy.cli import main; main()", *args]
    replaying = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    for _ in range(600):
        if len(list(tmp_path.glob("*.pids"))) == 2 and (tmp_path / "out" / "servers").exists():
            break
        time.sleep(0.1)
    replaying.send_signal(sig)
    _, err = replaying.communicate(timeout=120)
    assert replaying.returncode == 130
    assert "interrupted" in err
    servers = launched(tmp_path)
    assert len(servers) == 2
    for _, pids in servers:
        assert not any(alive(p) for p in pids)
