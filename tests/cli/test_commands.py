"""The command line as users meet it: help, version, flags, traces, check, results and plots."""

from __future__ import annotations

import csv
import json
import re
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from rich.console import Console

from slidingpolicy import LatencyPredictor, LinearModel
from slidingpolicy.cli.demo import demo_table
from slidingpolicy.cli.output import trying
from slidingpolicy.codec import parse_line
from slidingpolicy.policies import names
from slidingpolicy.runs.capacity_search import CapacitySpread
from tests.cli.conftest import run_cli as _run


def test_bare_command_prints_help_and_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run([], capsys)
    assert code == 0
    assert "Usage" in out
    assert "simulate" in out
    assert "error" not in err


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(["--version"], capsys)
    assert code == 0
    assert out.startswith("slidingpolicy 0.")


def test_policies_lists_a_line_on_each(capsys: pytest.CaptureFixture[str]) -> None:
    """One row per policy, in the registry's order, its name first and then its summary;
    the options follow (tests/cli/test_help.py)."""
    from slidingpolicy.policies import summary

    code, out, _ = _run(["policies"], capsys)
    assert code == 0
    table = out.split("what each option means")[0]
    starts = [line.split()[0] for line in table.splitlines() if line.split()]
    assert [s for s in starts if s in names()] == list(names())
    for name in names():
        row = next(line for line in table.splitlines() if line.startswith(name + " "))
        assert " ".join(summary(name).split()[:3]) in row, row


def test_boolean_flags_have_a_negative_form_and_no_value(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, out, _ = _run(["simulate", "--help"], capsys)
    assert "--no-strict" in out
    assert "--no-slo-tiers" in out
    strict = next(line for line in out.splitlines() if "--strict" in line)
    assert "<bool>" not in strict


def test_capacity_help_names_the_search_precision(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = _run(["capacity", "--help"], capsys)
    assert "search precision" in " ".join(out.split())


def test_ctrl_c_says_interrupted_and_exits_130(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupted(*args: Any, **kwargs: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("slidingpolicy.engine.simulator.simulate", interrupted)
    log = tmp_path / "plans.jsonl"
    code, _, err = _run(["simulate", "-n", "5", "--log", str(log), "-o", str(tmp_path)], capsys)
    assert code == 130
    assert err.strip() == "slidingpolicy: interrupted"
    assert list(tmp_path.iterdir()) == []  # no half-written log, not even a temporary one


def test_out_is_checked_before_any_computation(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def never(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("ran before checking --out")

    monkeypatch.setattr(sys.modules["slidingpolicy.runs.specs"], "run_many", never)
    blocker = tmp_path / "file"
    blocker.write_text("")
    code, _, err = _run(["sweep", "-n", "5", "--out", str(blocker / "sub")], capsys)
    assert code == 2
    assert "cannot write there" in err


def _trace(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def _document(out: Path) -> Any:
    return json.loads((out / "results.json").read_text())


def test_a_trace_without_times_arrives_at_poisson_rate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = _trace(tmp_path / "t.csv", "num_prefill_tokens,num_decode_tokens\n50,3\n80,2\n40,4\n")
    out = tmp_path / "out"
    code, _, err = _run(["simulate", "--trace", str(trace), "-n", "3", "-o", str(out)], capsys)
    assert code == 0, err
    assert _document(out)["spec"]["arrivals"] == {"kind": "poisson", "rate": 1.0}


def test_recorded_times_are_replayed_unless_rate_is_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = "\ufeffnum_prefill_tokens,num_decode_tokens,arrived_at\n50,3,10\n80,2,12.5\n40,4,20\n"
    trace = _trace(tmp_path / "t.csv", text)  # with a UTF-8 byte-order mark
    out = tmp_path / "out"
    code, _, err = _run(["simulate", "--trace", str(trace), "-n", "3", "-o", str(out)], capsys)
    assert code == 0, err
    rows = list(csv.DictReader((out / "requests.csv").open()))
    assert [float(r["arrival"]) for r in rows] == [0.0, 2.5, 10.0]
    assert _document(out)["window"] is None
    args = ["simulate", "--trace", str(trace), "-n", "3", "-o", str(out), "--rate", "2"]
    code, _, _ = _run(args, capsys)
    rows = [r for r in csv.DictReader((out / "requests.csv").open()) if r["counted"] == "True"]
    warmup = _document(out)["window"]["warmup"]
    arrivals = [float(r["arrival"]) - warmup for r in rows]
    assert arrivals == pytest.approx([0.0, 0.25, 1.0])  # mean rate 2/s, after the warm-up


def test_simulate_writes_its_png_and_a_row_per_request_with_its_class(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "sim"
    code, _, _ = _run(["simulate", "-n", "12", "--slo-tiers", "-o", str(out)], capsys)
    assert code == 0
    assert (out / "requests.png").read_bytes().startswith(b"\x89PNG")
    rows = list(csv.DictReader((out / "requests.csv").open()))
    assert sum(r["counted"] == "True" for r in rows) == 12
    assert {r["id"][0] for r in rows if r["counted"] == "False"} <= {"w", "t"}
    for column in ("arrival", "prompt_tokens", "output_tokens", "ttft_slo", "tbt_slo"):
        assert all(float(r[column]) > 0 or column == "arrival" for r in rows)
    assert {r["dataset"] for r in rows} <= {"sharegpt", "arxiv"}
    assert {r["tier"] for r in rows} <= {"0", "1", "2"}
    assert sorted(p.name for p in out.iterdir()) == [
        "requests.csv",
        "requests.png",
        "results.json",
        "timings.json",
    ]


@pytest.mark.slow
def test_capacity_writes_results_json_and_explains_its_columns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "cap"
    args = ["capacity", "-p", "sarathi", "-n", "8", "--seeds", "1", "--workers", "1"]
    args += ["-o", str(out)]
    code, text, _ = _run(args, capsys)
    assert code == 0
    assert "capacity" in _document(out)
    header = (out / "capacity.csv").read_text().splitlines()[0]
    assert header == "policy,seed,capacity,lowest_failing_rate,trials"
    text = " ".join(text.split())
    assert "lowest failing" in text
    assert "search precision" in text
    assert "qwen2.5-7b on 2× rtx3090" in text
    assert "8 requests per trial" in text
    timings = json.loads((out / "timings.json").read_text())
    tried = _document(out)["capacity"][0]["trials"]
    assert [t["rate"] for t in timings["trials"]] == [rate for rate, _ in tried]
    assert all(t["policy"] == "sarathi" and t["wall_seconds"] > 0 for t in timings["trials"])


@pytest.mark.slow
def test_capacity_on_ray_writes_what_local_processes_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--ray local` starts a Ray instance for the search, runs its trials there, shuts it
    down after, and writes the same results, byte for byte, as two local processes (all but
    the command line in their provenance)."""
    ray = pytest.importorskip("ray", reason="Ray is an optional extra: slidingpolicy[ray]")
    from slidingpolicy.runs import workers

    on_ray: list[int] = []
    ray_map = workers._RayTasks.map

    def counted(self: Any, fn: Any, items: Any, on_done: Any = None) -> Any:
        on_ray.append(len(items))
        return ray_map(self, fn, items, on_done)

    monkeypatch.setattr(workers._RayTasks, "map", counted)
    args = ["capacity", "-p", "sarathi,qoserve", "-n", "60", "--seeds", "1"]
    outputs = {}
    for where in (["--ray", "local"], ["--workers", "2"]):
        out = tmp_path / where[0].strip("-")
        code, _, err = _run([*args, *where, "-o", str(out)], capsys)
        assert code == 0, err
        results = json.loads((out / "results.json").read_text())
        assert results.pop("provenance")["command"].endswith(" ".join([*where, "-o", str(out)]))
        outputs[where[0]] = [json.dumps(results), (out / "capacity.csv").read_bytes()]
    assert outputs["--ray"] == outputs["--workers"]
    assert on_ray, "the trials ran on Ray"
    assert not ray.is_initialized(), "the instance it started is shut down"


def test_fit_on_few_samples_warns_instead_of_printing_nan(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    samples = tmp_path / "s.jsonl"
    code, _, _ = _run(["profile", "--samples", "3", "--out", str(samples)], capsys)
    assert code == 0
    code, out, err = _run(["fit", "--samples", str(samples)], capsys)
    assert code == 0
    assert "nan" not in out
    assert "warning: fitted on 2 samples" in " ".join(err.split())
    assert "R² is undefined" in err


def test_the_demo_table_reads_at_80_columns() -> None:
    policies = list(names())
    rates = [0.5, 1.0, 1.5, 2.0]
    metrics = SimpleNamespace(attainment=0.995)
    runs: Any = [SimpleNamespace(spec=SimpleNamespace(label=p), metrics=metrics) for p in policies]
    runs = [r for r in runs for _ in rates]
    found = [CapacitySpread(p, (12.345, 11.0, 13.5)) for p in policies]
    console = Console(width=80, record=True)
    console.print(demo_table(rates, runs, found, "title"))
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "capacity" in text
    assert "…" not in text
    assert "sarathi-edf+sc+mlps" in text
    assert "12.28" in text
    assert "11.00–13.50" in text


def test_the_demo_table_ranks_no_capacity_its_trials_did_not_bound() -> None:
    rates = [1.0]
    metrics = SimpleNamespace(attainment=1.0)
    runs: Any = [SimpleNamespace(spec=SimpleNamespace(label=p), metrics=metrics) for p in "ab"]
    found = [CapacitySpread("a", (4096.0, 4096.0)), CapacitySpread("b", (2.5, 3.5))]
    console = Console(width=80, record=True)
    console.print(demo_table(rates, runs, found, "title"))
    rows = [line for line in console.export_text().splitlines() if line.startswith("│")]
    assert rows[0].split("│")[1].strip() == "b"
    assert rows[1].split()[1:4] == ["a", "│", "≥"]
    assert "4096.00" not in console.export_text()


def test_a_capacity_search_that_passes_at_its_cap_says_so_and_divides_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Three requests of a finite trial arrive within a millisecond on an H100 and are served
    at once: the search passes at 4096 req/s, its cap. Not a capacity: a floor, unranked, no
    share of the bound, and a trial too short to stand for the long run."""
    args = ["capacity", "-p", "sarathi", "--hardware", "h100", "--workload", "cpu-mixed"]
    args += ["-n", "3", "--whole", "--start", "4096", "--seeds", "1", "--workers", "1"]
    code, out, err = _run([*args, "-o", str(tmp_path)], capsys)
    assert code == 0, err
    text = " ".join(out.split())
    assert "≥ 4096 (not bounded by these trials)" in text
    assert "of the bound: sarathi not bounded" in text
    assert "too short to stand for the long run" in text
    assert "4096.000" not in text


def test_capacity_progress_names_the_rates_tried() -> None:
    assert trying([("slidingserve", 1.25), ("slidingserve", 1.5)]) == (
        "trying slidingserve 1.25, 1.5/s"
    )
    many = [(f"policy-{i}", 1.0 + i / 10) for i in range(8)]
    assert trying(many) == "trying 8 rates, 1–1.7/s"


def _log_line(plan: dict[str, Any] | None, budget: Any = 2048, **drop: bool) -> str:
    state = {
        "now": 0.888,
        "prefill_throughput": 8000.0,
        "kv_free_tokens": None,
        "requests": [
            {
                "id": "d",
                "arrival": 0.0,
                "prompt_tokens": 100,
                "prefilled": 100,
                "generated": 1,
                "ttft_slo": 1.0,
                "tbt_slo": 0.1,
            },  # next token due at 1.1 s: T_cur = 0.212 s
            {
                "id": "p",
                "arrival": 0.5,
                "prompt_tokens": 400,
                "prefilled": 0,
                "generated": 0,
                "ttft_slo": 3.0,
                "tbt_slo": 0.1,
            },
        ],
    }
    line = {"state": state, "plan": plan, "token_budget": budget}
    for key in drop:
        del line[key]
    return json.dumps(line)


ENLARGED = {
    "allocations": [["d", 1], ["p", 340]],
    "path": "chunker",
    "prefill_budget": 340,
    "predicted_latency": 0.2,  # what the engine claimed; 1 ms per prefill token says 0.340 s
}


def test_check_recomputes_the_latency_with_a_predictor(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text(_log_line(ENLARGED) + "\n")
    code, out, _ = _run(["check", str(log)], capsys)
    assert code == 0
    assert "own predicted_latency" in " ".join(out.split())
    flat = LinearModel(0.0, (0.0, 0.0, 0.0, 0.0, 0.0, 1e-3, 0.0))
    predictor = tmp_path / "p.json"
    LatencyPredictor(flat, flat, flat, fallback=flat).save(str(predictor))
    code, out, _ = _run(["check", str(log), "--predictor", str(predictor)], capsys)
    assert code == 1
    assert "invariant 7: predicted latency 0.34s exceeds T_cur=0.212s" in out
    code, out, _ = _run(["check", str(log), "--hardware", "rtx3090"], capsys)
    assert "1 plans checked" in out


@pytest.mark.parametrize(
    ("line", "needle"),
    [
        (_log_line(ENLARGED, token_budget=True), "missing field 'token_budget'"),
        (_log_line({**ENLARGED, "path": "chunkr"}), "path='chunkr' is not one of chunker"),
        (_log_line(ENLARGED, budget=10**30), "too large"),
        ('{"state": {"now": NaN}}', "NaN"),
    ],
)
def test_check_trusts_nothing_in_a_line(
    line: str, needle: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text(line + "\n")
    code, _, err = _run(["check", str(log)], capsys)
    assert code == 2
    assert f"{log}:1: malformed" in err
    assert needle in err


def test_check_reports_broken_and_malformed_lines_together(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "log.jsonl"
    over_budget = _log_line(ENLARGED, budget=100)
    log.write_text(over_budget + "\n{broken\n" + _log_line(ENLARGED, budget=None) + "\n")
    code, out, err = _run(["check", str(log)], capsys)
    assert code == 3  # 1: a plan breaks an invariant, | 2: a line is malformed
    assert f"{log}:1: t=0.888000s invariant 4" in out
    assert f"{log}:2: malformed" in err
    assert "1 plans have token_budget null: invariant 4 not checked" in out


def test_check_counts_and_skips_steps_without_a_plan_and_ignores_extra_keys(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "trace.jsonl"
    planned = json.loads(_log_line(ENLARGED))
    planned.update(scheduled={"d": 1, "p": 340}, fallback=None, latency=0.2)
    unplanned = {**planned, "plan": None, "fallback": "policy raised ZeroDivisionError"}
    log.write_text(f"{json.dumps(planned)}\n{json.dumps(unplanned)}\n")
    code, out, err = _run(["check", str(log)], capsys)
    assert (code, err) == (0, "")
    assert "1 plans checked: 0 break an invariant, 0 malformed lines" in out
    assert "1 steps without a plan (scheduled by the engine itself)" in out


def test_the_documented_log_line_parses() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "checker.md").read_text()
    example = re.findall(r"```json\n(.*?)```", doc, re.S)[0]
    state, plan, budget = parse_line(json.dumps(json.loads(example)))
    assert (len(state.requests), plan.branch, budget) == (2, "chunker", 2048)


def test_capacity_with_seeds_reports_mean_and_range(tmp_path: Path) -> None:
    """`--seeds 2` runs a search per seed and reports each policy's mean and min–max."""
    from typer.testing import CliRunner

    from slidingpolicy.cli.app import app

    out = tmp_path / "cap"
    result = CliRunner().invoke(
        app,
        ["capacity", "-p", "sarathi", "-n", "40", "--seeds", "2", "--workers", "1", "-o", str(out)],
    )
    assert result.exit_code == 0, result.output
    assert "min–max" in result.output
    assert "the lowest and highest seed" in " ".join(result.output.split())
    seeds = [c["seed"] for c in json.loads((out / "results.json").read_text())["capacity"]]
    assert seeds == [0, 1]


def test_capacity_takes_policy_options_and_labels_results_with_them(tmp_path: Path) -> None:
    """Two configurations of one baseline in one search, told apart in every output."""
    from typer.testing import CliRunner

    from slidingpolicy.cli.app import app

    out = tmp_path / "cap"
    policies = "sarathi-edf[token_budget=256],sarathi-edf[token_budget=1024]"
    result = CliRunner().invoke(
        app,
        ["capacity", "-p", policies, "-n", "40", "--seeds", "1", "--workers", "1", "-o", str(out)],
    )
    assert result.exit_code == 0, result.output
    assert "sarathi-edf[token_budget=256]" in result.output
    rows = (out / "capacity.csv").read_text().splitlines()[1:]
    assert [row.split(",")[0] for row in rows] == policies.split(",")
    found = json.loads((out / "results.json").read_text())["capacity"]
    assert [c["policy"] for c in found] == policies.split(",")


@pytest.mark.slow
def test_the_demo_writes_every_result_and_ranks_by_mean_capacity(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from slidingpolicy.cli.app import app

    result = CliRunner().invoke(
        app, ["demo", "-n", "20", "--seeds", "2", "--workers", "1", "-o", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    folder = tmp_path / "demo"
    for name in ("results.json", "timings.json", "sweep.csv", "capacity.csv"):
        assert (folder / name).stat().st_size > 0
    for name in ("sweep.png", "capacity.png"):
        assert (folder / name).read_bytes().startswith(b"\x89PNG")
    found = json.loads((folder / "results.json").read_text())["capacity"]
    assert sorted((c["policy"], c["seed"]) for c in found) == sorted(
        (p, s) for p in names() for s in (0, 1)
    )
    means = {p: sum(c["capacity"] for c in found if c["policy"] == p) / 2 for p in names()}
    shown = [line.split()[1] for line in result.output.splitlines() if line.startswith("│")]
    shown = [p for p in shown if p in means]
    assert shown == sorted(means, key=lambda p: -means[p])


def test_simulate_writes_a_timeline_that_perfetto_reads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The Trace Event Format's JSON object: traceEvents, each with ph, pid, ts (and dur for
    complete events); a batch per iteration."""
    out, trace = tmp_path / "sim", tmp_path / "run.json"
    args = ["simulate", "-p", "sarathi", "-n", "12", "--timeline", str(trace), "-o", str(out)]
    code, _, err = _run(args, capsys)
    assert code == 0, err
    events = json.loads(trace.read_text())["traceEvents"]
    assert all({"ph", "pid", "name"} <= set(e) for e in events)
    assert all("ts" in e and "dur" in e for e in events if e["ph"] == "X")
    batches = [e for e in events if e["ph"] == "X" and e["pid"] == 1]
    assert len(batches) == _document(out)["metrics"]["iterations"]
