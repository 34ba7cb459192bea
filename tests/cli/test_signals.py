"""Ctrl-C and SIGTERM, sent to a real `slidingpolicy` process: one line on stderr, exit code
128 + the signal, no temporary file left, no worker left running, and a second Ctrl-C during
the cleanup changes nothing (no traceback, no hang).

Every wait polls for a condition (a file, a worker, a signal mask) with a deadline; none
sleeps for a guessed time.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest

pytestmark = pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")

T = TypeVar("T")
DEADLINE = 120.0
ROOT = Path(__file__).resolve().parents[2]


def _until(condition: Callable[[], T | None], what: str) -> T:
    """`condition()` once it is truthy, polled until `DEADLINE` seconds have passed."""
    end = time.monotonic() + DEADLINE
    while time.monotonic() < end:
        found = condition()
        if found:
            return found
        time.sleep(0.02)
    raise AssertionError(f"waited {DEADLINE:g} s for {what}")


@pytest.fixture
def start(tmp_path: Path) -> Iterator[Callable[..., subprocess.Popen[str]]]:
    """Start `slidingpolicy ARGS` in its own process group (as a shell starts a job), in
    `tmp_path`; whatever is still running at the end is killed."""
    started: list[subprocess.Popen[str]] = []

    def run(*args: str) -> subprocess.Popen[str]:
        environment = {**os.environ, "PYTHONPATH": str(ROOT)}
        process = subprocess.Popen(
            [sys.executable, "-c", "from slidingpolicy.cli import main; main()", *args],
            cwd=tmp_path,
            env=environment,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        started.append(process)
        return process

    yield run
    for process in started:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def _children(pid: int) -> list[int]:
    """The processes whose parent is `pid`."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def _ignores(pid: int, signum: int) -> bool:
    """Whether process `pid` ignores `signum` (its SigIgn mask in /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigIgn:"):
            return bool(int(line.split()[1], 16) >> (signum - 1) & 1)
    return False


def _finish(process: subprocess.Popen[str]) -> tuple[int, str]:
    """Its exit code and stderr, once it has exited (within the deadline)."""
    _, err = process.communicate(timeout=DEADLINE)
    return process.returncode, err


@pytest.mark.parametrize(
    ("signum", "code", "word"),
    [(signal.SIGTERM, 143, "terminated"), (signal.SIGINT, 130, "interrupted")],
)
def test_a_signal_during_simulate_log_leaves_no_temporary_file(
    start: Callable[..., subprocess.Popen[str]],
    tmp_path: Path,
    signum: int,
    code: int,
    word: str,
) -> None:
    process = start("simulate", "-n", "20000", "--log", "plans.jsonl", "-o", "out")
    _until(
        lambda: [p for p in tmp_path.glob(".plans.*.tmp.jsonl") if p.stat().st_size > 0],
        "the log's temporary file to fill",
    )
    process.send_signal(signum)
    assert _finish(process) == (code, f"slidingpolicy: {word}\n")
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["out"]


def test_sigterm_during_capacity_stops_every_worker(
    start: Callable[..., subprocess.Popen[str]],
) -> None:
    process = start(
        "capacity", "-p", "vllm,sarathi", "-n", "3000", "--seeds", "1", "--workers", "2"
    )
    workers = _until(lambda: _children(process.pid) or None, "the pool's workers")
    process.send_signal(signal.SIGTERM)
    assert _finish(process) == (143, "slidingpolicy: terminated\n")
    assert [w for w in workers if Path(f"/proc/{w}").exists()] == []


@pytest.mark.parametrize("wait_for_cleanup", [False, True])
def test_a_second_ctrl_c_during_cleanup_changes_nothing(
    start: Callable[..., subprocess.Popen[str]], wait_for_cleanup: bool
) -> None:
    """Ctrl-C reaches the whole process group, workers included; the second one comes at
    once, or once the command is known to be cleaning up (it then ignores SIGINT)."""
    process = start(
        "capacity", "-p", "vllm,sarathi", "-n", "3000", "--seeds", "1", "--workers", "2"
    )
    workers = _until(lambda: _children(process.pid) or None, "the pool's workers")
    os.killpg(process.pid, signal.SIGINT)
    if wait_for_cleanup:
        _until(lambda: _ignores(process.pid, signal.SIGINT), "the command to ignore Ctrl-C")
    os.killpg(process.pid, signal.SIGINT)
    assert _finish(process) == (130, "slidingpolicy: interrupted\n")
    assert [w for w in workers if Path(f"/proc/{w}").exists()] == []
