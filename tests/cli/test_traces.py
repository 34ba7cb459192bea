"""Traces on the command line: the whole trace by default, read once (a real pipe works),
and `capacity` and `sweep` take one, their rates rescaling its recorded times."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.cli.conftest import run_cli

ROOT = Path(__file__).resolve().parents[2]
TIMED = "num_prefill_tokens,num_decode_tokens,arrived_at\n" + "".join(
    f"{300 + 40 * i},{4 + i % 3},{0.5 * i}\n" for i in range(12)
)
"""Twelve requests arriving every 0.5 s (2 req/s)."""


def _file(tmp_path: Path, text: str = TIMED) -> Path:
    path = tmp_path / "trace.csv"
    path.write_text(text)
    return path


def _results(out: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads((out / "results.json").read_text())
    return data


def test_simulate_runs_the_whole_trace_by_default(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    three = _file(tmp_path, "num_prefill_tokens,num_decode_tokens\n100,3\n200,4\n50,2\n")
    out = tmp_path / "sim"
    code, text, err = run_cli(["simulate", "--trace", str(three), "-o", str(out)], capsys)
    assert code == 0, err
    assert "3 requests" in text
    assert _results(out)["metrics"]["requests"] == 3  # type: ignore[index]


def _from_pipe(
    tmp_path: Path, trace_arg: str, args: tuple[str, ...] = ("simulate",), **popen: object
) -> dict[str, object]:
    """Run `slidingpolicy ARGS --trace TRACE_ARG` in a process of its own; its results."""
    out = tmp_path / "piped"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "slidingpolicy.cli", *args, "--trace", trace_arg]
    done = subprocess.run(  # type: ignore[call-overload]
        [*command, "-o", str(out)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
        **popen,
    )
    assert done.returncode == 0, done.stderr
    return _results(out)


@pytest.mark.slow
def test_a_trace_from_a_real_pipe_is_read_once(tmp_path: Path) -> None:
    """`--trace /dev/fd/N` on the read end of an os.pipe, as `--trace <(...)` gives it."""
    read, write = os.pipe()

    def feed() -> None:
        with os.fdopen(write, "w") as pipe:
            pipe.write(TIMED)

    writer = threading.Thread(target=feed)
    writer.start()
    try:
        found = _from_pipe(tmp_path, f"/dev/fd/{read}", pass_fds=(read,))
    finally:
        writer.join()
        os.close(read)
    assert found["metrics"]["requests"] == 12  # type: ignore[index]


@pytest.mark.slow
def test_a_trace_from_stdin(tmp_path: Path) -> None:
    found = _from_pipe(tmp_path, "/dev/stdin", input=TIMED)
    assert found["metrics"]["requests"] == 12  # type: ignore[index]


@pytest.mark.slow
def test_workers_never_read_the_trace_again(tmp_path: Path) -> None:
    """A sweep over two worker processes, its trace read once from stdin by the command."""
    args = ("sweep", "-p", "sarathi", "--rates", "1,2", "--workers", "2")
    found = _from_pipe(tmp_path, "/dev/stdin", args, input=TIMED)
    assert [r["spec"]["workload"]["requests"] for r in found["runs"]] == [12, 12]  # type: ignore[attr-defined]


def test_sweep_on_a_trace_rescales_its_recorded_times(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "sweep"
    args = ["sweep", "-p", "sarathi", "--trace", str(_file(tmp_path)), "--rates", "1,4"]
    code, text, err = run_cli([*args, "--workers", "1", "-o", str(out)], capsys)
    assert code == 0, err
    runs = _results(out)["runs"]
    assert [r["spec"]["arrivals"] for r in runs] == [  # type: ignore[attr-defined]
        {"kind": "tracetimes", "rate": 1.0},
        {"kind": "tracetimes", "rate": 4.0},
    ]
    assert {r["spec"]["workload"]["requests"] for r in runs} == {12}  # type: ignore[attr-defined]
    assert "trace.csv" in text
    assert "p99 TTFT" in text
    assert "p99 ITL" in text


def test_capacity_on_a_trace_searches_rescaled_replays(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    long_prompts = "num_prefill_tokens,num_decode_tokens,arrived_at\n" + "".join(
        f"{3000 + 100 * i},{4 + i % 3},{0.5 * i}\n" for i in range(12)
    )
    out = tmp_path / "cap"
    trace = _file(tmp_path, long_prompts)
    args = ["capacity", "-p", "sarathi", "--trace", str(trace), "--seeds", "1"]
    code, _, err = run_cli([*args, "--workers", "1", "-o", str(out)], capsys)
    assert code == 0, err
    found = _results(out)
    assert found["base"]["arrivals"]["kind"] == "tracetimes"  # type: ignore[index]
    result = found["capacity"][0]  # type: ignore[index]
    assert 0 < result["capacity"] < result["failing"] < 1000
    assert len(result["trials"]) > 2
