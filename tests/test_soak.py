"""The soak (bench/soak.py) end to end on a short run of the transformers adapter's server:
every bad SLO answered 400, cancelled streams and normal requests alike leave the server
serving, and at the end SIGTERM to its main process alone leaves no process, a trace whose
every line parses, and `slidingpolicy check` clean. Needs the Python of an environment with
transformers and slidingpolicy-transformers[serve] in SLIDINGPOLICY_TRANSFORMERS_PYTHON."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PYTHON = os.environ.get("SLIDINGPOLICY_TRANSFORMERS_PYTHON")
SOAK = Path(__file__).resolve().parent.parent / "bench" / "soak.py"

pytestmark = pytest.mark.skipif(
    not PYTHON,
    reason="SLIDINGPOLICY_TRANSFORMERS_PYTHON is not set (the Python of an environment with "
    "transformers and slidingpolicy-transformers[serve])",
)

SLO_KINDS = ("ttft_slo=-1", "ttft_slo=0", "ttft_slo='abc'", "ttft_slo=1e308", "tbt_slo=1e-9",
             "protected='yes'")  # fmt: skip


def test_a_short_soak_ends_clean(tmp_path: Path) -> None:
    engine = ["--engine", "transformers", "--shape", "qwen2-tiny", "--python", str(PYTHON)]
    load = ["--minutes", "0.4", "--rate", "2", "--bad", "0.4", "--cancel", "0.2"]
    sampling = ["--sample", "4", "--warmup", "0", "--out", str(tmp_path)]
    command = [sys.executable, str(SOAK), *engine, *load, *sampling]
    subprocess.run(command, check=True, capture_output=True, timeout=400)
    report = json.loads((tmp_path / "soak.json").read_text())
    outcomes: dict[str, int] = report["outcomes"]
    for kind in SLO_KINDS:
        answered = {k: n for k, n in outcomes.items() if k.startswith(f"bad {kind}:")}
        assert set(answered) <= {f"bad {kind}: http 400"}, answered
    assert outcomes.get("bad not JSON: http 400", 0) > 0
    assert outcomes.get("normal: finished", 0) > 0
    assert outcomes.get("cancelled: dropped by the client", 0) > 0
    assert all(k.startswith(("bad ", "normal: finished", "cancelled: dropped")) for k in outcomes)
    assert report["exited_on_sigterm"], report
    assert report["trace_lines"] > 0
    assert report["trace_broken_lines"] == 0
    assert report["check_exit"] == 0, report["check_says"]
    assert all(s["memory_mib"] for s in report["samples"])
