"""A cluster run routes every request that arrives once (a retry once more, never to the
replica that gave it up), reads reports no staler than its period, frees every replica's KV
cache of what finished, and is the same run for the same seed."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

import attrs
import numpy as np
import pytest

from slidingpolicy import by_name, default_predictor
from slidingpolicy.cluster import ClusterSpec, simulate_cluster
from slidingpolicy.cluster.cluster_output import ClusterOutput
from slidingpolicy.cluster.event_loop import _Cluster
from slidingpolicy.errors import InvalidRecordError, UnknownNameError
from slidingpolicy.hardware import default_hardware
from slidingpolicy.records.request import Request
from slidingpolicy.routing import Ledger, ReplicaReport, Route, router_registry
from slidingpolicy.routing import by_name as router_by_name
from slidingpolicy.runs.specs import WorkloadSpec
from slidingpolicy.workloads import Poisson, Workload

SEEN: list[tuple[str, float, tuple[str, ...], tuple[float, ...]]] = []
"""What the spy router was asked: (request id, when, replicas, their reports' made_at)."""


@attrs.frozen
class Spy:
    """The router `inner` names, recording what it is asked."""

    inner: str = "slo-aware"
    name = "spy"

    def route(
        self, request: Request, reports: Mapping[str, ReplicaReport], ledger: Ledger, now: float
    ) -> Route:
        made = tuple(reports[r].made_at for r in sorted(reports))
        SEEN.append((request.id, now, tuple(sorted(reports)), made))
        return router_by_name(self.inner).route(request, reports, ledger, now)


@pytest.fixture(autouse=True)
def spy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(router_registry, "_REGISTRY", dict(router_registry._REGISTRY))
    router_registry.register("spy", Spy, ("inner",), "records what it is asked")
    SEEN.clear()


def _run(
    workload: Workload, cluster: ClusterSpec, policy: str = "slidingserve+", seed: int = 3
) -> ClusterOutput:
    predictor = default_predictor()
    from slidingpolicy.policies.labels import parse_label

    name, options = parse_label(policy)
    policies = [by_name(name, predictor, **dict(options)) for _ in range(cluster.replicas)]
    return simulate_cluster(policies, workload, default_hardware(), seed, cluster, predictor)


@pytest.mark.parametrize("inner", ["round-robin", "power-of-two", "least-tokens", "slo-aware"])
def test_every_request_that_arrives_is_routed_once(inner: str) -> None:
    workload = WorkloadSpec("mixed-v1", 150, whole=True).build(Poisson(6.0), 3)
    ran = _run(workload, ClusterSpec(3, "spy", (("inner", inner),)))
    routed = Counter(rid for rid, *_ in SEEN)
    assert set(routed.values()) == {1}
    assert sum(ran.cluster.routed) == len(routed) == len(workload.requests)
    assert ran.run.metrics.completed == 150
    assert ran.run.kv_blocks_in_use == 0
    assert all(count > 0 for count in ran.cluster.routed)


@pytest.mark.parametrize("period", [0.0, 0.5, 10.0])
def test_reports_are_never_staler_than_the_period(period: float) -> None:
    workload = WorkloadSpec("mixed-v1", 80).build(Poisson(5.0), 4)
    _run(workload, ClusterSpec(3, "spy", (), period))
    assert SEEN
    for _, now, replicas, made in SEEN:
        assert len(replicas) == 3
        assert all(m <= now for m in made)
        assert all(now - m < period for m in made) or (period == 0.0 and made == (now,) * 3)


def test_a_request_given_up_is_routed_once_more_never_to_its_giver() -> None:
    workload = WorkloadSpec("mixed-v1", 300, whole=True).build(Poisson(9.0), 6)
    cluster = ClusterSpec(3, "spy", (("inner", "round-robin"),), reroute=True)
    ran = _run(workload, cluster, "slidingserve+[give_up_after=1]")
    asked: dict[str, list[tuple[float, tuple[str, ...]]]] = {}
    for rid, now, replicas, _ in SEEN:
        asked.setdefault(rid, []).append((now, replicas))
    retried = {rid: times for rid, times in asked.items() if len(times) > 1}
    assert len(retried) == ran.cluster.retries > 0
    assert all(len(times) == 2 for times in retried.values())
    for times in retried.values():
        (first, everyone), (again, others) = times
        assert again > first
        assert len(others) == len(everyone) - 1
    index = {r.id: i for i, r in enumerate(workload.requests)}
    served = ran.run.outcome.completed[[index[rid] for rid in retried]]
    assert served.any(), "no retried request was served: the test shows nothing"


def test_no_retry_without_reroute_and_fewer_given_up_with_it() -> None:
    workload = WorkloadSpec("mixed-v1", 300, whole=True).build(Poisson(9.0), 6)
    policy = "slidingserve+[give_up_after=1]"
    once = _run(workload, ClusterSpec(3, "round-robin"), policy)
    again = _run(workload, ClusterSpec(3, "round-robin", reroute=True), policy)
    assert once.cluster.retries == 0
    assert again.run.metrics.given_up < once.run.metrics.given_up


def test_an_early_notice_finishes_a_request_at_its_arrival() -> None:
    workload = WorkloadSpec("mixed-v1", 200, whole=True).build(Poisson(12.0), 2)
    ran = _run(workload, ClusterSpec(2, "slo-aware", (("notice", True),)))
    given_up = ran.run.outcome.given_up
    assert ran.cluster.notices > 0
    assert int(np.count_nonzero(given_up == 0.0)) == ran.cluster.notices


def test_the_same_seed_gives_the_same_run() -> None:
    workload = WorkloadSpec("mixed-v1", 100).build(Poisson(5.0), 8)
    first = _run(workload, ClusterSpec(3, "power-of-two"), seed=8)
    second = _run(workload, ClusterSpec(3, "power-of-two"), seed=8)
    other = _run(workload, ClusterSpec(3, "power-of-two"), seed=9)
    assert first.run.metrics.to_dict() == second.run.metrics.to_dict()
    assert first.cluster == second.cluster
    assert first.cluster.routed != other.cluster.routed


def test_a_bad_cluster_is_refused_naming_its_field() -> None:
    with pytest.raises(InvalidRecordError, match="cluster: replicas=0 must be >= 1"):
        ClusterSpec(0)
    with pytest.raises(InvalidRecordError, match="cluster: report_period=-1"):
        ClusterSpec(2, report_period=-1.0)
    with pytest.raises(UnknownNameError, match="unknown router 'nearest'"):
        ClusterSpec(2, "nearest")
    workload = WorkloadSpec("mixed-v1", 10).build(Poisson(1.0), 0)
    with pytest.raises(InvalidRecordError, match="cluster: policies gives 1 for 2 replicas"):
        simulate_cluster(
            [by_name("sarathi", default_predictor())],
            workload,
            default_hardware(),
            0,
            ClusterSpec(2),
            default_predictor(),
        )


@pytest.mark.parametrize("router", ["power-of-two", "slo-aware", "least-tokens"])
def test_routing_a_periods_arrivals_at_its_start_is_routing_each_at_its_arrival(
    router: str,
) -> None:
    """With a report period and no reroute, the cluster routes a period's arrivals when the
    reports come (a speed-up); routed one by one as they arrive instead, the run is the same."""
    workload = WorkloadSpec("mixed-v1", 120).build(Poisson(8.0), 5)
    predictor = default_predictor()
    cluster = ClusterSpec(3, router, (), 2.0)
    ran = []
    for ahead in (True, False):
        policies = [by_name("slidingserve+", predictor) for _ in range(3)]
        run = _Cluster(policies, workload, default_hardware(), 5, cluster, predictor, None)
        assert run.ahead
        run.ahead = ahead
        ran.append(run.run())
    first, second = ran
    assert first.cluster == second.cluster
    assert first.run.metrics.to_dict() == second.run.metrics.to_dict()
    assert first.run.end == second.run.end


def test_progress_is_told_every_counted_request_once() -> None:
    workload = WorkloadSpec("mixed-v1", 60).build(Poisson(4.0), 1)
    told: list[int] = []
    predictor = default_predictor()
    policies = [by_name("slidingserve+", predictor) for _ in range(2)]
    simulate_cluster(
        policies,
        workload,
        default_hardware(),
        1,
        ClusterSpec(2, "slo-aware"),
        predictor,
        progress=told.append,
    )
    assert all(n > 0 for n in told)
    assert sum(told) == len(workload.counted)
