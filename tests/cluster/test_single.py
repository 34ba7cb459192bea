"""One replica behind a router is the single engine, step for step: the same metrics, every
request's outcome, where the run ended and the engine's figures, whichever router (one that
reads the replica's report admits its arrivals early, which changes nothing), whatever the
report period (a decode-only run cut at a report is the run stepped), with KV pressure,
give-ups, a miss budget, a learning policy or an overload."""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np
import pytest

from slidingpolicy import by_name, default_predictor
from slidingpolicy.cluster import ClusterSpec, simulate_cluster
from slidingpolicy.engine import EngineOptions, RunOutput, simulate
from slidingpolicy.hardware import default_hardware
from slidingpolicy.runs.specs import WorkloadSpec
from slidingpolicy.workloads import Poisson

CASES = [
    ("slidingserve+", 2.5, 120, None, True, None),
    ("slidingserve+[give_up_after=1]", 6.0, 200, 30_000, True, None),
    ("sarathi", 12.0, 300, 30_000, True, None),
    ("qoserve", 1.8, 150, None, False, 3),
    ("slidingserve+[learn=false]", 1.7, 200, None, False, 4),
    ("vllm", 2.0, 100, None, True, None),
]
"""(policy label, rate, requests, KV tokens, whole trial, miss budget)."""


def _same(single: RunOutput, cluster: RunOutput, cut: bool) -> None:
    """Equal outputs; with `cut` (a report period), the decode-only runs cut at the reports
    are more, the iterations in them the same."""
    assert cluster.metrics.to_dict() == single.metrics.to_dict()
    for field in attrs.fields(type(single.outcome)):
        assert np.array_equal(
            getattr(cluster.outcome, field.name),
            getattr(single.outcome, field.name),
            equal_nan=True,
        ), field.name
    assert (cluster.end, cluster.stalled, cluster.stopped_early) == (
        single.end,
        single.stalled,
        single.stopped_early,
    )
    assert cluster.kv_blocks_in_use == single.kv_blocks_in_use
    timed = ("wall_seconds", "policy_cpu_seconds", "policy_cpu_p50", "policy_cpu_p99")
    zero: dict[str, Any] = dict.fromkeys(timed, 0.0)
    if cut:
        zero["decode_runs"] = 0
        assert cluster.stats.decode_runs >= single.stats.decode_runs
    assert attrs.evolve(cluster.stats, **zero) == attrs.evolve(single.stats, **zero)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize(
    "cluster",
    [
        ClusterSpec(1),
        ClusterSpec(1, "slo-aware"),
        ClusterSpec(1, "least-tokens", (), 2.0),
        ClusterSpec(1, "power-of-two", (), 2.0, True),
    ],
    ids=["round-robin", "slo-aware", "least-tokens-period-2", "power-of-two-period-2-reroute"],
)
def test_one_replica_is_the_single_engine(
    case: tuple[str, float, int, int | None, bool, int | None], cluster: ClusterSpec
) -> None:
    from slidingpolicy.policies.labels import parse_label

    text, rate, n, kv, whole, budget = case
    name, options = parse_label(text)
    predictor, hardware = default_predictor(), default_hardware()
    workload = WorkloadSpec("mixed-v1", n, whole=whole).build(Poisson(rate), 5)
    engine = EngineOptions(kv_capacity_tokens=kv, miss_budget=budget)
    single = simulate(by_name(name, predictor, **dict(options)), workload, hardware, 5, engine)
    ran = simulate_cluster(
        [by_name(name, predictor, **dict(options))],
        workload,
        hardware,
        5,
        cluster,
        predictor,
        engine,
    )
    _same(single, ran.run, cluster.report_period > 0.0)
    assert ran.cluster.notices == ran.cluster.retries == 0
