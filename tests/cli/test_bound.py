"""`slidingpolicy bound` and the bound where capacity is shown: the JSON, the table, the
shares, and bad arguments."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from rich.console import Console

from slidingpolicy.cli.capacity import shares_line
from slidingpolicy.runs.capacity_search import CapacitySpread
from tests.cli.conftest import run_cli as _run


@pytest.mark.slow
def test_bound_json_prints_the_bound_what_binds_it_and_the_mix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "b"
    code, text, _ = _run(["bound", "--workload", "arxiv", "--json", "-o", str(out)], capsys)
    assert code == 0
    found = json.loads(text)
    assert found["bound"] > 0
    assert "time" in [b["constraint"] for b in found["binding"]]
    assert found["iterations_per_s"] >= found["pacing_iterations_per_s"] * (1 - 1e-6)
    assert found["token_types"]
    assert json.loads((out / "results.json").read_text())["bound"] == found["bound"]


@pytest.mark.slow
def test_bound_with_seeds_bounds_the_trials(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["bound", "--workload", "sharegpt", "-n", "30", "--seeds", "1", "-o", str(tmp_path)]
    code, text, _ = _run(args, capsys)
    assert code == 0
    text = " ".join(text.split())
    assert "bound (req/s)" in text
    assert "trials, seed 0" in text
    trials = json.loads((tmp_path / "results.json").read_text())["trials"]
    assert trials[0]["capacity"] > 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--hardware", "tpu"], "unknown hardware 'tpu'"),
        (["--workload", "chat"], "unknown workload 'chat'"),
        (["-n", "0"], "--requests=0 must be >= 1"),
    ],
)
def test_bound_rejects_bad_arguments_in_one_line(
    args: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _run(["bound", *args, "-o", str(tmp_path)], capsys)
    assert code == 2
    assert message in err
    assert len(err.strip().splitlines()) == 1


def test_a_trace_has_no_poisson_trials_to_bound(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text("num_prefill_tokens,num_decode_tokens\n50,3\n80,2\n40,4\n")
    args = ["bound", "--trace", str(trace), "-n", "3", "--seeds", "1", "-o", str(tmp_path)]
    code, _, err = _run(args, capsys)
    assert code == 2
    assert "--seeds" in err


def test_capacity_shows_each_policys_share_of_the_bound(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "cap"
    args = ["capacity", "-p", "sarathi", "-n", "8", "--seeds", "1", "--workers", "1"]
    code, text, _ = _run([*args, "--workload", "arxiv", "-o", str(out)], capsys)
    assert code == 0
    document = json.loads((out / "results.json").read_text())
    share = document["capacity"][0]["capacity"] / document["bound"]["bound"]
    text = " ".join(text.split())
    assert "of the bound" in text
    assert f"{100 * share:.1f}%" in text
    assert "bound:" in text


def test_the_shares_line_ranks_the_policies_and_fits_80_columns() -> None:
    spread = [CapacitySpread("sarathi", (1.0, 1.2)), CapacitySpread("slidingserve+", (1.5,))]
    console = Console(width=80, record=True)
    console.print(shares_line(spread, 2.0))
    text = " ".join(console.export_text().split())
    assert text == "of the bound: slidingserve+ 75.0%, sarathi 55.0%"


@pytest.mark.slow
def test_capacity_on_a_traced_engine_says_it_has_no_bound(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The bound reads the roofline-based models; a step trace's model has none, and capacity
    says so rather than fail."""
    trace = tmp_path / "steps.jsonl"
    simulate = ["simulate", "-p", "sarathi-edf", "--rate", "2", "-n", "20", "--log", str(trace)]
    code, _, err = _run([*simulate, "-o", str(tmp_path / "run")], capsys)
    assert code == 0, err
    args = ["capacity", "-p", "sarathi-edf", "-n", "20", "--seeds", "1", "--start", "2"]
    args += ["--workers", "1", "--hardware-trace", str(trace), "-o", str(tmp_path / "cap")]
    code, text, err = _run(args, capsys)
    assert code == 0, err
    assert "bound: none for a step trace" in " ".join(text.split())
    assert json.loads((tmp_path / "cap" / "results.json").read_text())["bound"] is None


@pytest.mark.slow
def test_bound_takes_the_kv_cache_size(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A cache of 20 000 tokens holds the decodes of far fewer requests: the bound falls and
    the KV cache binds."""
    args = ["bound", "--workload", "arxiv", "--json", "--kv-tokens", "20000", "-o", str(tmp_path)]
    code, text, _ = _run(args, capsys)
    assert code == 0
    small = json.loads(text)
    code, text, _ = _run(["bound", "--workload", "arxiv", "--json", "-o", str(tmp_path)], capsys)
    assert small["bound"] < json.loads(text)["bound"]
    assert {"kv", "context_per_iteration"} & {b["constraint"] for b in small["binding"]}


def test_bound_gives_the_limit_of_n_replicas(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, text, _ = _run(["bound", "--replicas", "4", "--json", "-o", str(tmp_path)], capsys)
    assert code == 0
    found = json.loads(text)
    assert found["replicas"] == 4
    assert found["replicas_limit"] == pytest.approx(4 * found["bound"])
    code, text, _ = _run(["bound", "--replicas", "4", "-o", str(tmp_path)], capsys)
    assert code == 0
    row = re.search(r"limit of 4 replicas \(req/s\)\s*│\s*([\d.]+)", text)
    assert row is not None
    assert row.group(1) == f"{4 * found['bound']:.3f}"
