"""The benchmarks still run and print their tables (on tiny inputs; no timing is asserted)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

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
    assert sum(line.startswith("sarathi ") for line in lines) == 18 + 1 + 1
    assert any(line.startswith("states from an engine run") for line in lines)
    overload = [line for line in lines if line.startswith("overload")]
    assert overload
    assert lines[-1].split()[0] == "sarathi"
    assert len(lines[-1].split()) == 1 + 2 + 1
    assert len(lines[-1].split()[-1].split("/")) == 2


def test_engine_bench_prints_a_row_per_case() -> None:
    lines = _run("engine.py", "--requests", "20", "--skip-anchor")
    rows = [line for line in lines if " @ 1/s, " in line]
    assert len(rows) == 8
    assert all(line.split()[6] == "20" for line in rows)
