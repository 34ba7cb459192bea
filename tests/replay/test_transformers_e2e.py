"""`slidingpolicy replay --launch transformers` end to end: transformers' own FIFO and a policy
through the adapter, each a real engine process serving the tiny Qwen2 shape on 127.0.0.1,
every request answered in full, the results written, the policy's trace flushed, and no
server left once the command ends. Needs the Python of an environment with transformers and
slidingpolicy-transformers[serve] in SLIDINGPOLICY_TRANSFORMERS_PYTHON."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.cli.conftest import run_cli

PYTHON = os.environ.get("SLIDINGPOLICY_TRANSFORMERS_PYTHON")

pytestmark = pytest.mark.skipif(
    not PYTHON,
    reason="SLIDINGPOLICY_TRANSFORMERS_PYTHON is not set (the Python of an environment with "
    "transformers and slidingpolicy-transformers[serve])",
)

REQUESTS = 12


def commands_running() -> list[list[str]]:
    """The argv of every process /proc lists."""
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            found.append((entry / "cmdline").read_bytes().decode().split("\0")[:-1])
        except OSError:
            continue
    return found


def listening(url: str) -> bool:
    """True when something accepts connections at `url`'s host and port."""
    parts = urlsplit(url)
    try:
        with socket.create_connection((parts.hostname, parts.port), timeout=5):
            return True
    except OSError:
        return False


def test_native_and_a_policy_replay_through_transformers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "short.csv"
    rows = [f"{16 + 8 * (i % 5)},{4 + i % 4}" for i in range(REQUESTS)]
    trace.write_text("num_prefill_tokens,num_decode_tokens\n" + "\n".join(rows) + "\n")
    out, traces = tmp_path / "out", tmp_path / "traces"
    args = ["replay", "--launch", "transformers", "--shape", "qwen2-tiny", "--policies",
            "native,sarathi-edf", "--trace", str(trace), "--rate", "4", "-n", str(REQUESTS),
            "--whole", "--warmup", "1", "--timeout", "60", "--start-timeout", "300",
            "--trace-dir", str(traces), "--out", str(out)]  # fmt: skip
    code, stdout, err = run_cli(args, capsys)
    assert code == 0, err
    for name in ("results.json", "runs.csv", "summary.csv", "requests.csv", "replay.png"):
        assert (out / name).stat().st_size > 0, name
    document = json.loads((out / "results.json").read_text())
    runs = document["runs"]
    assert sorted(r["policy"] for r in runs) == ["native", "sarathi-edf"]
    for run in runs:
        assert run["failures"] == {}, run["failures"]
        assert [r["failure"] for r in run["requests"]] == [None] * REQUESTS
    assert (traces / "sarathi-edf.jsonl").stat().st_size > 0
    targets = document["targets"]
    assert [t["starts"] for t in targets] == [1, 1]
    running = commands_running()
    for target in targets:
        assert target["command"][0] == PYTHON
        assert target["command"] not in running
        assert not listening(target["url"])
    assert "sarathi-edf" in stdout
