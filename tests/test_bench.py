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
    assert sum(line.startswith("sarathi ") for line in lines) == 18 + 1 + 2
    assert any(line.startswith("states from an engine run") for line in lines)
    start = next(i for i, line in enumerate(lines) if line.startswith("overload"))
    repeated, successive = (line.split() for line in lines[start:] if line.startswith("sarathi"))
    assert len(repeated) == 1 + 2 + 1
    assert len(repeated[-1].split("/")) == 2
    assert len(successive) == 1 + 2
    assert lines[-1].split()[0] == "sarathi"


def test_engine_bench_prints_a_row_per_case() -> None:
    lines = _run("engine.py", "--requests", "20", "--skip-anchor")
    rows = [line for line in lines if " @ 1/s, " in line]
    assert len(rows) == 8
    assert all(line.split()[6] == "20" for line in rows)
