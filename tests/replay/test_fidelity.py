"""`slidingpolicy replay-fidelity` without vLLM: a replay's results folder written here, the
real engine's step trace written by the offline engine itself (`simulate --log`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from slidingpolicy.cli import main
from slidingpolicy.predictors.locations import packaged_path
from slidingpolicy.replay.engine_fidelity import (
    Simulation,
    policy_of,
    ranking_rows,
    server_budget,
    setting_runs,
    within_bounds,
)
from slidingpolicy.replay.recorded import read_replay
from slidingpolicy.runs.specs import run
from tests.cli.conftest import run_cli
from tests.replay.test_cli import one_line_error

Capture = pytest.CaptureFixture[str]

WORKLOAD = {"name": "mixed-v1", "requests": 30, "trace": None, "slo_scale": 1.0,
            "slo_tiers": False, "slo_source": "sharegpt"}  # fmt: skip
ARMS = ("native", "sarathi-edf")
RATES = (2.0, 4.0)
SEEDS = (0, 1)
KV = 60_000
BUDGET = 1024


@pytest.fixture(scope="module")
def engine_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A step trace of the offline engine (the 'real' engine of these tests)."""
    folder = tmp_path_factory.mktemp("trace")
    trace = folder / "steps.jsonl"
    args = ["simulate", "--policy", "sarathi-edf", "--workload", "mixed-v1", "--rate", "3",
            "-n", "60", "--log", str(trace), "--out", str(folder / "out")]  # fmt: skip
    with pytest.raises(SystemExit) as done:
        main(args)
    assert done.value.code in (0, None)
    return trace


def write_replay(
    folder: Path, metrics: Any, repeats: int = 2, workload: dict[str, Any] = WORKLOAD
) -> Path:
    """A replay's results.json: every arm × rate × seed × repeat of `workload`, `metrics(arm,
    rate, seed, repeat)` each; the native server given BUDGET tokens, its log reporting KV
    tokens."""
    folder.mkdir(parents=True)
    log = folder / "native.log"
    log.write_text(f"INFO [kv_cache_utils.py] GPU KV cache size: {KV:,} tokens\n")
    runs = [
        {
            "policy": arm,
            "rate": rate,
            "seed": seed,
            "repeat": k,
            "workload": workload,
            "metrics": metrics(arm, rate, seed, k),
        }
        for rate in RATES
        for seed in SEEDS
        for k in range(repeats)
        for arm in ARMS
    ]
    command = [
        "python",
        "-m",
        "slidingpolicy_vllm",
        "serve",
        "m",
        f"--max-num-batched-tokens={BUDGET}",
    ]
    targets = [{"arm": "native", "command": command, "log": str(log)},
               {"arm": "sarathi-edf", "command": ["python"], "log": None}]  # fmt: skip
    document = {"command": [], "settings": {"predictor": None}, "targets": targets, "runs": runs}
    (folder / "results.json").write_text(json.dumps(document))
    return folder


def simulation(trace: Path) -> Simulation:
    return Simulation((str(trace),), KV, BUDGET, str(packaged_path()))


def fidelity(
    folder: Path, trace: Path, capsys: Capture, *extra: str
) -> tuple[int, str, dict[str, Any]]:
    out = folder / "fidelity"
    args = ["replay-fidelity", str(folder), "--hardware-trace", str(trace), "--workers", "1",
            *extra]  # fmt: skip
    code, stdout, err = run_cli(args, capsys)
    assert code == 0, err
    return code, stdout, json.loads((out / "fidelity.json").read_text())


def flat(arm: str, rate: float, seed: int, repeat: int) -> dict[str, float]:
    return {"attainment": 0.5, "ttft_p50": 0.1, "tbt_p50": 0.02}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("workload", "trial"),
    [
        # a replay recorded before steady-state trials (no `whole`) was a finite trial
        (WORKLOAD, ["--whole"]),
        ({**WORKLOAD, "whole": False}, []),
    ],
    ids=["finite", "steady-state"],
)
def test_the_simulated_side_is_simulate_run_directly(
    workload: dict[str, Any], trial: list[str], engine_trace: Path, tmp_path: Path, capsys: Capture
) -> None:
    folder = write_replay(tmp_path / "replay", flat, workload=workload)
    _, _, document = fidelity(folder, engine_trace, capsys)
    assert document["simulation"]["kv_tokens"] == KV
    assert document["simulation"]["native_budget"] == BUDGET
    simulated = document["simulated"]
    assert len(simulated) == len(ARMS) * len(RATES) * len(SEEDS)
    for arm, rate, seed in (("native", 4.0, 1), ("sarathi-edf", 2.0, 0)):
        out = tmp_path / f"simulate-{arm}-{rate}-{seed}"
        args = ["simulate", "--policy", policy_of(arm, BUDGET), "--workload", "mixed-v1",
                "-n", "30", "--rate", str(rate), "--seed", str(seed), "--hardware-trace",
                str(engine_trace), "--kv-tokens", str(KV), "--predictor", str(packaged_path()),
                "--out", str(out), *trial]  # fmt: skip
        code, _, err = run_cli(args, capsys)
        assert code == 0, err
        direct = json.loads((out / "results.json").read_text())["metrics"]
        mine = next(
            s
            for s in simulated
            if s["spec"]["seed"] == seed
            and s["spec"]["arrivals"]["rate"] == rate
            and s["spec"]["policy"] == ("vllm" if arm == "native" else arm)
        )
        assert mine["metrics"] == direct


def test_a_perfect_match_gives_zero_differences_and_an_agreeing_ranking(
    engine_trace: Path, tmp_path: Path, capsys: Capture
) -> None:
    probe = write_replay(tmp_path / "probe", flat, repeats=1)
    plan = simulation(engine_trace)
    truth = {
        (arm, rate, seed): run(plan.spec(r)).metrics.to_dict()
        for arm, rate, seed, r in setting_runs(read_replay([probe]))
    }
    assert len({m["attainment"] for m in truth.values()}) > 1, "a test that cannot fail"
    folder = write_replay(tmp_path / "replay", lambda a, r, s, k: truth[a, r, s])
    _, stdout, document = fidelity(folder, engine_trace, capsys)
    rows = document["table"]
    assert len(rows) == len(ARMS) * len(RATES)
    for row in rows:
        assert row["attainment_difference"] == pytest.approx(0.0, abs=1e-12)
        assert row["ttft_p50_relative_error"] == pytest.approx(0.0, abs=1e-12)
        assert row["tbt_p50_relative_error"] == pytest.approx(0.0, abs=1e-12)
        assert row["within_bounds"] is True
    assert all(p["agrees"] in (True, None) for p in document["ranking"])
    assert f"{len(rows)} of {len(rows)} settings" in " ".join(stdout.split())
    for name in ("fidelity.csv", "ranking.csv", "fidelity.png"):
        assert (folder / "fidelity" / name).is_file()


def row(policy: str, median: float, low: float, high: float, simulated: float,
        runs: int = 3) -> dict[str, Any]:  # fmt: skip
    return {"policy": policy, "rate": 1.0, "runs": runs, "real_attainment_median": median,
            "real_attainment_min": low, "real_attainment_max": high,
            "simulated_attainment": simulated}  # fmt: skip


def test_a_ranking_is_judged_only_where_the_real_ranges_do_not_overlap() -> None:
    rows = [row("a", 0.9, 0.85, 0.95, 0.7), row("b", 0.6, 0.5, 0.7, 0.8),
            row("c", 0.65, 0.6, 0.86, 0.1), row("d", 0.2, 0.2, 0.2, 0.3, runs=1)]  # fmt: skip
    pairs = {(p["first"], p["second"]): p for p in ranking_rows(rows)}
    assert pairs["a", "b"]["separated"] is True
    assert pairs["a", "b"]["agrees"] is False
    assert pairs["a", "c"]["separated"] is False
    assert pairs["a", "c"]["agrees"] is None
    assert pairs["b", "c"]["separated"] is False
    assert pairs["a", "d"]["separated"] is False, "one run has no spread to exceed"
    assert pairs["a", "b"]["real_difference"] == pytest.approx(0.3)


def test_a_difference_exactly_at_a_bound_is_within_it() -> None:
    # All 120 requests met in the real runs, 114 of 120 simulated: 6/120 is exactly 0.05,
    # though 114/120 - 1 in floating point is a hair beyond it; a p50 exactly 15% long, too.
    at_bound = {
        "attainment_difference": 114 / 120 - 1.0,
        "ttft_p50_relative_error": 0.0345 / 0.03 - 1.0,
        "tbt_p50_relative_error": 0.0,
    }
    assert abs(at_bound["attainment_difference"]) > 0.05
    assert abs(at_bound["ttft_p50_relative_error"]) > 0.15
    assert within_bounds(at_bound)
    beyond = {**at_bound, "attainment_difference": 113 / 120 - 1.0}
    assert not within_bounds(beyond)
    slow = {**at_bound, "ttft_p50_relative_error": 0.0346 / 0.03 - 1.0}
    assert not within_bounds(slow)


def test_the_native_budget_is_read_from_the_server_command(tmp_path: Path) -> None:
    folder = write_replay(tmp_path / "replay", flat, repeats=1)
    recorded = read_replay([folder])
    assert server_budget(recorded) == BUDGET
    assert recorded.kv_tokens() == KV
    assert policy_of("native", 512) == "vllm[token_budget=512]"
    assert policy_of("slidingserve+", 512) == "slidingserve+"


def test_bad_inputs_are_one_line(engine_trace: Path, tmp_path: Path, capsys: Capture) -> None:
    args = ["replay-fidelity", str(tmp_path), "--hardware-trace", str(engine_trace)]
    code, _, err = run_cli(args, capsys)
    one_line_error(code, err, "results.json")
    folder = write_replay(tmp_path / "replay", flat, repeats=1)
    args = ["replay-fidelity", str(folder), "--hardware-trace", str(tmp_path / "none.jsonl")]
    code, _, err = run_cli(args, capsys)
    one_line_error(code, err, "none.jsonl")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "results.json").write_text('{"runs": [{"policy": "x"}]}')
    args = ["replay-fidelity", str(tmp_path / "bad"), "--hardware-trace", str(engine_trace)]
    code, _, err = run_cli(args, capsys)
    one_line_error(code, err, "malformed")
