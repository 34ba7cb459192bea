"""`slidingpolicy reproduce`: the committed quick report is what the command makes.

The report is a pure function of its raw documents (re-rendered byte for byte), and the raw
documents are what the package computes from the seeds (slices of every experiment re-run
here and compared with the committed rows).
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from slidingpolicy.engine.simulator import simulate
from slidingpolicy.errors import InvalidRecordError
from slidingpolicy.policies import by_name
from slidingpolicy.reproduce import QUICK, write_report
from slidingpolicy.reproduce.experiments import (
    PREDICTOR_HARDWARE,
    UNIT_POLICY,
    base_spec,
    burst_spec,
    burst_trial,
    capacity_labels,
    mean_capacity,
    packaged_predictor,
    parallel_map,
    predictor_job,
    predictor_trial,
    rows_of,
)
from slidingpolicy.reproduce.load_sections import burst_section
from slidingpolicy.reproduce.presets import DATASETS, PAPER_SETTINGS, ROBUSTNESS_PREDICTORS
from slidingpolicy.reproduce.report import render
from slidingpolicy.reproduce.report_cells import Capacities
from slidingpolicy.reproduce.run import REPORT, RESULTS, TIMINGS
from slidingpolicy.reproduce.timing import timed
from slidingpolicy.runs.capacity_search import capacity_search
from slidingpolicy.runs.specs import predictor_of, run
from slidingpolicy.runs.workers import cluster
from tests.engine.test_golden import linear_algebra_fingerprint

REPORT_DIR = Path(__file__).resolve().parents[2] / "docs" / "report"


def _committed() -> tuple[dict[str, Any], dict[str, Any]]:
    results = json.loads((REPORT_DIR / RESULTS).read_text())
    timings = json.loads((REPORT_DIR / TIMINGS).read_text())
    return results, timings


@pytest.mark.slow
def test_the_committed_report_is_its_raw_documents_rendered(tmp_path: Path) -> None:
    results, timings = _committed()
    assert render(results, timings) == (REPORT_DIR / REPORT).read_text()
    for name in (RESULTS, TIMINGS):
        shutil.copy(REPORT_DIR / name, tmp_path / name)
    path = write_report(tmp_path)
    assert path.read_text() == (REPORT_DIR / REPORT).read_text()
    assert all((tmp_path / f).stat().st_size > 0 for f in ("capacity.png", "load.png"))


def test_the_committed_report_is_the_quick_preset() -> None:
    results, _ = _committed()
    assert results["config"] == QUICK.to_dict()


REPORT_FINGERPRINT = "2873a27655b617feef01"
"""The linear-algebra fingerprint of the machine that made the committed report
(tests/engine/test_golden.py): a policy that learns online reproduces bit for bit only
there."""


@pytest.mark.slow
def test_a_capacity_search_of_the_committed_report_reproduces() -> None:
    if linear_algebra_fingerprint() != REPORT_FINGERPRINT:
        pytest.skip(f"slidingserve+ learns online: reproduces on fingerprint {REPORT_FINGERPRINT}")
    results, _ = _committed()
    setting, dataset = PAPER_SETTINGS[0], "arxiv"
    mine = rows_of(results["capacity"], setting.key, dataset, "slidingserve+")
    row = next(r for r in mine if r["seed"] == 1)
    base = base_spec(QUICK, setting, dataset, QUICK.requests).with_policy("slidingserve+")
    found = capacity_search(attrs.evolve(base, seed=1), workers=1)
    assert (found.capacity, len(found.trials)) == (row["capacity"], row["trials"])


@pytest.mark.slow
def test_a_robustness_search_of_the_committed_report_reproduces() -> None:
    """`slidingserve+[learn=false]` with the under-predicting predictor, seed 0."""
    results, _ = _committed()
    key, dataset = QUICK.robustness_cases[0]
    label, (kind, hardware) = "slidingserve+[learn=false]", ROBUSTNESS_PREDICTORS[0]
    row = next(
        r
        for r in results["robustness"]
        if (r["setting"], r["dataset"], r["policy"], r["predictor"], r["seed"])
        == (key, dataset, label, kind, 0)
    )
    base = base_spec(QUICK, QUICK.setting(key), dataset, QUICK.requests).with_policy(label)
    spec = attrs.evolve(base, predictor=packaged_predictor(hardware))
    found = capacity_search(spec, workers=1)
    assert (found.capacity, len(found.trials)) == (row["capacity"], row["trials"])


def test_a_load_point_of_the_committed_report_reproduces() -> None:
    results, _ = _committed()
    setting, dataset = PAPER_SETTINGS[0], "mixed-v1"
    row = next(
        r for r in rows_of(results["load"], setting.key, dataset, "qoserve") if r["load"] == 2.0
    )
    unit = mean_capacity(results["capacity"], setting.key, dataset, UNIT_POLICY)
    spec = base_spec(QUICK, setting, dataset, QUICK.requests).with_policy("qoserve")
    metrics = run(spec.with_rate(2.0 * unit)).metrics
    assert row["rate"] == 2.0 * unit
    assert row["violation"] == 1.0 - metrics.attainment
    assert row["ttft_p99"] == metrics.ttft_p99


def test_a_burst_of_the_committed_report_reproduces() -> None:
    results, _ = _committed()
    key, dataset = QUICK.burst_cases[0]
    row = next(
        r
        for r in results["burst"]
        if (r["setting"], r["dataset"], r["policy"], r["seed"]) == (key, dataset, "qoserve", 0)
    )
    unit = mean_capacity(results["capacity"], key, dataset, UNIT_POLICY)
    spec = burst_spec(QUICK, QUICK.setting(key), dataset, unit).with_policy("qoserve")
    assert burst_trial((spec, QUICK.burst.bin, QUICK.burst.end))["bins"] == row["bins"]


@pytest.mark.slow
def test_a_predictor_row_of_the_committed_report_reproduces() -> None:
    results, _ = _committed()
    hardware = PREDICTOR_HARDWARE[1]
    mine = predictor_trial(hardware, QUICK.predictor_samples)
    theirs = [r for r in results["predictor"] if r["hardware"] == mine[0]["hardware"]]
    assert [r["group"] for r in mine] == [r["group"] for r in theirs]
    for a, b in zip(mine, theirs, strict=True):
        assert a["samples"] == b["samples"]
        for field in ("mae_ms", "rmse_ms", "r2", "bias_ms"):
            assert math.isclose(a[field], b[field], rel_tol=1e-9, abs_tol=1e-12), field


def test_burst_bins_count_every_request_that_arrives_in_the_window() -> None:
    setting = PAPER_SETTINGS[0]
    spec = burst_spec(QUICK, setting, "mixed-v1", 0.5).with_policy("sarathi-edf")
    spec = attrs.evolve(spec, workload=attrs.evolve(spec.workload, requests=120))
    bins = burst_trial((spec, 20.0, 200.0))["bins"]
    arrivals = spec.workload.build(spec.arrivals, spec.seed).columns().arrival
    assert len(bins) == 10
    assert sum(a for a, _ in bins) == int((arrivals < 200.0).sum())
    assert all(0 <= m <= a for a, m in bins)


def test_the_burst_section_shows_the_late_requests_ttft() -> None:
    """p99 / max of each policy's late requests, the highest over the seeds."""
    results, _ = _committed()
    rows = results["burst"]
    late = [{**r, "late_ttft_p99": 10.0 + r["seed"], "late_ttft_max": 40.0} for r in rows]
    section = burst_section({**results, "burst": late})
    assert "TTFT (s) of the late requests" in section
    seeds = results["config"]["burst_seeds"]
    assert section.count(f"{10.0 + seeds - 1:.1f} / 40.0") == 4 * len(QUICK.burst_cases)
    without = [{k: v for k, v in r.items() if not k.startswith("late_ttft")} for r in rows]
    assert "TTFT (s) of the late requests" not in burst_section({**results, "burst": without})


def test_the_timed_wrapper_plans_what_its_policy_plans() -> None:
    spec = base_spec(QUICK, PAPER_SETTINGS[0], "mixed-v1", 80).with_rate(1.5)
    for label in ("slidingserve", "qoserve", "sarathi-edf"):
        spec = spec.with_policy(label)
        workload = spec.workload.build(spec.arrivals, spec.seed)
        inner = by_name(spec.policy, predictor_of(spec))
        plain = simulate(inner, workload, spec.hardware.build(), spec.seed)
        wrapped = timed(by_name(spec.policy, predictor_of(spec)), 2)
        timed_run = simulate(wrapped, workload, spec.hardware.build(), spec.seed)
        assert timed_run.metrics == plain.metrics
        assert len(wrapped.decisions) == plain.stats.decisions
        summary = wrapped.summary()
        assert summary[-1]["path"] == "all"
        assert summary[-1]["decisions"] == sum(r["decisions"] for r in summary[:-1])


def test_every_case_sizes_each_label_once() -> None:
    for setting, dataset in QUICK.cases:
        labels = capacity_labels(QUICK, setting.key, dataset)
        assert len(labels) == len(set(labels))
        assert UNIT_POLICY in labels


def test_a_config_naming_an_unknown_case_is_refused() -> None:
    with pytest.raises(InvalidRecordError, match="load_cases"):
        attrs.evolve(QUICK, load_cases=(("no such setting", "mixed-v1"),))
    with pytest.raises(InvalidRecordError, match="burst_cases"):
        attrs.evolve(QUICK, burst_cases=((PAPER_SETTINGS[0].key, "no-such-data"),))
    with pytest.raises(InvalidRecordError, match="window_cases"):
        attrs.evolve(QUICK, window_cases=())
    with pytest.raises(InvalidRecordError, match="seeds"):
        attrs.evolve(QUICK, seeds=0)


capacities_st = st.lists(st.floats(0.1, 10.0), min_size=1, max_size=6)


@given(capacities_st, capacities_st)
def test_paired_ratios_are_the_mean_of_per_seed_ratios(
    mine: list[float], theirs: list[float]
) -> None:
    n = min(len(mine), len(theirs))
    rows = [
        {"setting": "s", "dataset": "d", "policy": p, "seed": i, "capacity": v}
        for p, values in (("a", mine[:n]), ("b", theirs[:n]))
        for i, v in enumerate(values)
    ]
    ratio, won, lost = Capacities(rows).ratio("s", "d", "a", "b")
    expected = [a / b for a, b in zip(mine[:n], theirs[:n], strict=True)]
    assert math.isclose(ratio, sum(expected) / n)
    assert (won, lost) == (sum(r > 1 for r in expected), sum(r < 1 for r in expected))


def _results(gain: dict[str, float]) -> dict[str, Any]:
    """A results document where slidingserve(+) beats every baseline by `gain` per data set."""
    config = attrs.evolve(
        QUICK,
        seeds=1,
        settings=PAPER_SETTINGS[:1],
        ablation_cases=((PAPER_SETTINGS[0].key, "mixed-v1"),),
        window_cases=((PAPER_SETTINGS[0].key, "mixed-v1"),),
    )
    key = PAPER_SETTINGS[0].key
    rows = []
    for dataset in DATASETS:
        for label in capacity_labels(config, key, dataset):
            ours = label.startswith("slidingserve")
            capacity = 1.0 + gain[dataset] if ours else 1.0
            rows.append(
                {
                    "setting": key,
                    "dataset": dataset,
                    "policy": label,
                    "seed": 0,
                    "capacity": capacity,
                    "failing": None,
                    "trials": 5,
                }
            )
    return {"config": config.to_dict(), "capacity": rows, "load": [], "burst": [], "predictor": []}


@given(st.lists(st.floats(-0.5, 1.5), min_size=4, max_size=4))
def test_the_verdict_on_fig4_is_decided_by_the_numbers(gains: list[float]) -> None:
    from slidingpolicy.reproduce.capacity_sections import capacity_section

    gain = dict(zip(DATASETS, gains, strict=True))
    text = capacity_section(_results(gain))
    seen = [(1.0 + g) / 1.0 - 1.0 for g in gains]
    inside = sum(0.25 <= g <= 1.11 for g in seen)
    below = sum(g < 0.25 for g in seen)
    above = sum(g > 1.11 for g in seen)
    assert f"{inside} of 4 data sets inside the paper's range, {below} below it, {above}" in text
    adjusted = dict(zip(DATASETS, seen, strict=True))
    most = max(adjusted, key=lambda d: adjusted[d])
    assert f"It gains most on {most}" in text


def test_the_readmes_first_screen_shows_the_reports_headline_and_a_figure() -> None:
    from slidingpolicy.reproduce.capacity_sections import headline

    results, _ = _committed()
    readme = (REPORT_DIR.parents[1] / "README.md").read_text()
    first_screen = readme[: readme.index("## Quick start")]
    assert headline(results) in first_screen
    assert "](docs/report/capacity.png)" in first_screen


def _no_tick(_: int) -> None:
    return None


@pytest.mark.slow
def test_the_reports_own_trials_on_ray_equal_the_local_ones() -> None:
    """Fig. 6's and Table 5's trials through one connection (`cluster`), as `reproduce` runs
    them with --ray; capacity and load trials on Ray are tests/runs/test_workers.py's."""
    ray = pytest.importorskip("ray", reason="Ray is an optional extra: slidingpolicy[ray]")
    base = burst_spec(QUICK, PAPER_SETTINGS[0], "mixed-v1", 0.5)
    base = attrs.evolve(base, workload=attrs.evolve(base.workload, requests=60))
    bursts = [(base.with_policy(p), 20.0, 100.0) for p in ("sarathi-edf", "slidingserve+")]
    fits = [(PREDICTOR_HARDWARE[0], 200)]
    local = (
        parallel_map(burst_trial, bursts, 2, _no_tick),
        parallel_map(predictor_job, fits, 2, _no_tick),
    )
    with cluster("local") as address:
        assert address is not None
        remote = (
            parallel_map(burst_trial, bursts, None, _no_tick, address),
            parallel_map(predictor_job, fits, None, _no_tick, address),
        )
        assert ray.get_runtime_context().gcs_address == address
    assert not ray.is_initialized()
    assert remote == local


@given(st.floats(0.5, 2.0), st.floats(0.2, 1.0), st.floats(0.5, 1.5))
def test_the_robustness_verdict_is_decided_by_the_numbers(
    own: float, fallen: float, learned: float
) -> None:
    """Learning by default moves each SlidingServe configuration by its own predictor's
    capacity over its reference's, and the under-predicting figures are the rows'."""
    from slidingpolicy.reproduce.ablation_sections import robustness_section
    from slidingpolicy.reproduce.experiments import OWN
    from slidingpolicy.reproduce.presets import ROBUSTNESS_POLICIES, UNDER

    key, dataset = QUICK.robustness_cases[0]
    config = attrs.evolve(QUICK, robustness_cases=((key, dataset),))

    def row(policy: str, capacity: float, predictor: str | None = None) -> dict[str, Any]:
        found = {"setting": key, "dataset": dataset, "policy": policy, "seed": 0}
        found |= {"capacity": capacity, "failing": None, "trials": 5}
        return found if predictor is None else {**found, "predictor": predictor}

    capacity, robustness = [], []
    for label in ROBUSTNESS_POLICIES:
        reference = label.endswith("[learn=false]")
        mine = 1.0 if reference else own
        if label in ("qoserve", "greedy", "slidingserve", "slidingserve+"):
            capacity.append(row(label, mine))
        else:
            robustness.append(row(label, mine, OWN))
        for kind, _ in ROBUSTNESS_PREDICTORS:
            robustness.append(row(label, fallen if reference else learned, kind))
    results = {"config": config.to_dict(), "capacity": capacity, "robustness": robustness}
    text = " ".join(robustness_section(results).split())
    moved = f"{100 * (own - 1.0):+.1f}%"
    assert f"moves `slidingserve+` by {moved} with its own predictor" in text
    held = f"with the {UNDER} one it holds {learned:.3f} req/s where the reference falls to"
    assert f"{held} {fallen:.3f}" in text


def test_a_limit_of_the_committed_report_reproduces() -> None:
    """The limit is the fluid bound of the case, computed again here."""
    from slidingpolicy.bound.limits import limit
    from slidingpolicy.runs.specs import WorkloadSpec

    results, _ = _committed()
    setting, dataset = PAPER_SETTINGS[1], "sharegpt"
    row = next(
        r for r in results["limits"] if (r["setting"], r["dataset"]) == (setting.key, dataset)
    )
    found = limit(WorkloadSpec(dataset), setting.hardware)
    assert math.isclose(found.bound, row["bound"], rel_tol=1e-9)
    assert list(found.binding) == row["binding"]
