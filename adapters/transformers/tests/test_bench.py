"""`bench/transformers_adapter.py` still runs and prints its table (a few requests, the tiny
shape; no timing asserted)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[3] / "bench" / "transformers_adapter.py"


def test_the_adapter_bench_prints_a_row_per_arm() -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(BENCH),
            "--shape",
            "qwen2-tiny",
            "-n",
            "6",
            "--rate",
            "20",
            "--policies",
            "slidingserve+,sarathi-edf",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    rows = [line.split() for line in done.stdout.splitlines()[2:] if "%" in line]
    assert [row[0] for row in rows] == ["native", "slidingserve+", "sarathi-edf"]
    assert all(int(row[1]) > 0 for row in rows)
    assert rows[0][-2:] == ["0.00%", "0.0%"]
