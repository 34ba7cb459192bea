"""`bench/vllm_adapter.py` still runs and prints its table (a few steps; no timing asserted)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[3] / "bench" / "vllm_adapter.py"


def test_the_adapter_bench_prints_a_row_per_size_and_case() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH), "--steps", "3", "--policy", "slidingserve"],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    rows = [line.split() for line in done.stdout.splitlines() if "slidingserve" in line]
    cases = [(row[0], row[1]) for row in rows]
    sizes = ["16+8", "64+32", "256+64"]
    assert cases == [(size, case) for case in ("held", "admitted") for size in sizes]
    assert all(row[-1].endswith("×") and row[-4].endswith("×") for row in rows)


ENGINE_BENCH = BENCH.parent / "vllm_engine.py"


@pytest.mark.engine
def test_the_engine_bench_prints_a_row_per_arm() -> None:
    done = subprocess.run(
        [sys.executable, str(ENGINE_BENCH), "-n", "4", "--policies", "slidingserve+"],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    rows = [line.split() for line in done.stdout.splitlines()[2:] if "%" in line]
    assert [row[0] for row in rows] == ["vllm", "slidingserve+"]
    assert all(int(row[1]) > 0 for row in rows)
    assert rows[0][-3:-1] == ["0.00%", "0.0%"]
    assert all(0.0 <= float(row[-1].rstrip("%")) <= 100.0 for row in rows)
