"""--replicas, --router, --report-period and --reroute on simulate, sweep and capacity: the
policy runs on every replica of a cluster behind each router named, results name the cluster,
and capacity divides by the limit of N replicas; `routers` lists what --router takes."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any

import pytest

from slidingpolicy.bound.limits import limit, replicas_limit
from slidingpolicy.routing import names, options_of
from slidingpolicy.runs.specs import HardwareSpec, WorkloadSpec
from tests.cli.conftest import run_cli


def _document(out: Path) -> Any:
    return json.loads((out / "results.json").read_text())


def test_routers_lists_each_router_with_its_options(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(["routers"], capsys)
    assert code == 0
    rows = [line.split()[0] for line in out.splitlines() if line.split()]
    for name in names():
        assert name in rows
        for option in options_of(name):
            assert f"{option.name}={str(option.default).lower()}" in out
    assert "notice" in out.split("what each option means")[1]


def test_simulate_on_a_cluster_routes_every_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["simulate", "-p", "slidingserve+", "--replicas", "3", "--router", "slo-aware"]
    args += ["--report-period", "2", "--rate", "4", "-n", "20", "--whole", "-o", str(tmp_path)]
    code, out, err = run_cli(args, capsys)
    assert code == 0, err
    document = _document(tmp_path)
    routed = document["cluster"]["routed"]
    assert len(routed) == 3
    assert sum(routed) == 20
    assert document["spec"]["cluster"]["router"] == "slo-aware"
    assert document["spec"]["cluster"]["report_period"] == 2.0
    text = " ".join(out.split())
    assert "slidingserve+ @ 3×slo-aware, reports 2 s on mixed-v1" in text
    assert f"routed to each replica: {', '.join(map(str, routed))}; early notices: 0" in text


def test_one_replica_behind_round_robin_is_the_single_engine(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The command line's cluster is the library's: one replica gives the single run's
    metrics (`tests/cluster/test_single.py` proves it step by step)."""
    metrics = []
    for extra in ([], ["--router", "round-robin"]):
        out = tmp_path / str(len(extra))
        args = ["simulate", "-p", "sarathi-edf", "--rate", "1.5", "-n", "30", "-o", str(out)]
        code, _, err = run_cli([*args, *extra], capsys)
        assert code == 0, err
        metrics.append(_document(out)["metrics"])
    assert metrics[0] == metrics[1]


def test_sweep_compares_every_router(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["sweep", "-p", "sarathi-edf", "--replicas", "2", "--router", "all", "--rates", "2"]
    args += ["-n", "10", "--workers", "1", "-o", str(tmp_path)]
    code, out, err = run_cli(args, capsys)
    assert code == 0, err
    with (tmp_path / "sweep.csv").open() as file:
        policies = [row["policy"] for row in csv.DictReader(file)]
    assert policies == [f"sarathi-edf @ 2×{name}" for name in names()]
    for name in names():
        assert f"2×{name}" in out


@pytest.mark.slow
def test_capacity_on_a_cluster_divides_by_the_limit_of_its_replicas(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["capacity", "-p", "sarathi-edf", "--replicas", "2", "--router"]
    args += ["power-of-two,slo-aware", "-n", "10", "--seeds", "1", "--workers", "1"]
    args += ["--start", "3", "-o", str(tmp_path)]
    code, out, err = run_cli(args, capsys)
    assert code == 0, err
    document = _document(tmp_path)
    one = limit(WorkloadSpec("mixed-v1", 10), HardwareSpec()).bound
    assert document["replicas"] == 2
    assert document["replicas_limit"] == pytest.approx(replicas_limit(one, 2)) == 2 * one
    text = " ".join(out.split())
    assert "capacity on mixed-v1, 2 replicas of qwen2.5-7b on 2× rtx3090" in text
    found = {c["policy"]: c["capacity"] for c in document["capacity"]}
    assert set(found) == {"sarathi-edf @ 2×power-of-two", "sarathi-edf @ 2×slo-aware"}
    shares = re.search(r"of the limit of 2 replicas: (.*?) limit of 2 replicas", text)
    assert shares is not None
    for policy, capacity in found.items():
        assert f"{policy} {100 * capacity / (2 * one):.1f}%" in shares.group(1)
