"""`bench/vllm_adapter.py` still runs and prints its table (a few steps; no timing asserted)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

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
