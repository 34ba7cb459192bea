"""A router's own cost per request: wall time of `route` (and of the ledger's bookkeeping), and
of the report a replica makes for it, on the decisions a real cluster run meets.

Each case runs `slidingserve+` on N replicas of the default hardware (qwen2.5-7b, 2× rtx3090)
behind a spy router at `--load` of the limit of N replicas (mixed-v1, Poisson), with reports
`--period` seconds apart (0, the default: fresh at every decision, a report per replica per
decision; with a period, the ledger of what was sent since grows between reports). The spy
keeps every decision's inputs (the request, every replica's report, the ledger, the time)
and, with fresh reports, times each replica's report made anew on its state then. Every
router then routes the same decisions, `--repeat` times each (the best kept): p50 and p99
per request, and the mean of the ledger's `sent_to`. `power-of-two` is Ray Serve's default
rule; Ray's own router adds its actor calls, which this does not measure. Prints figures,
asserts nothing: `python bench/router.py [--replicas N ...] [--requests N] [--load F]
[--repeat N] [--period S]`.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Mapping
from typing import Any

import attrs
import numpy as np

from slidingpolicy import by_name, default_predictor
from slidingpolicy.bound.limits import limit, replicas_limit
from slidingpolicy.cluster import ClusterSpec, simulate_cluster
from slidingpolicy.cluster.reports import Fresh
from slidingpolicy.hardware import default_hardware
from slidingpolicy.records.request import Request
from slidingpolicy.routing import Ledger, ReplicaReport, Route, names, router_registry
from slidingpolicy.routing import by_name as router_by_name
from slidingpolicy.runs.specs import HardwareSpec, WorkloadSpec
from slidingpolicy.workloads import Poisson

Decision = tuple[Request, dict[str, ReplicaReport], Ledger, float]


@attrs.define
class Spy:
    """Routes as slo-aware, keeping each decision's inputs and timing the reports made."""

    decisions: list[Decision] = attrs.field(factory=list)
    report_seconds: list[float] = attrs.field(factory=list)
    name = "spy"

    def route(
        self, request: Request, reports: Mapping[str, ReplicaReport], ledger: Ledger, now: float
    ) -> Route:
        if isinstance(reports, Fresh):
            for replica in reports.replicas.values():
                replica._report = None
                started = time.perf_counter()
                replica.report(now)
                self.report_seconds.append(time.perf_counter() - started)
        held = {name: reports[name] for name in reports}
        self.decisions.append((request, held, ledger, now))
        return router_by_name("slo-aware").route(request, held, ledger, now)


def capture(replicas: int, requests: int, load: float, seed: int, period: float) -> Spy:
    """The decisions of one cluster run at `load` of the limit of `replicas` replicas."""
    spy = Spy()
    router_registry.register("spy", lambda: spy, (), "keeps what it is asked")
    try:
        workload_spec = WorkloadSpec("mixed-v1", requests, whole=True)
        rate = load * replicas_limit(limit(workload_spec, HardwareSpec()).bound, replicas)
        workload = workload_spec.build(Poisson(rate), seed)
        predictor = default_predictor()
        policies = [by_name("slidingserve+", predictor) for _ in range(replicas)]
        cluster = ClusterSpec(replicas, "spy", (), period)
        simulate_cluster(policies, workload, default_hardware(), seed, cluster, predictor)
    finally:
        del router_registry._REGISTRY["spy"]
    return spy


def time_router(name: str, decisions: list[Decision], repeat: int) -> np.ndarray[Any, Any]:
    """Seconds per `route` call of router `name` on each decision, the best of `repeat`."""
    router = router_by_name(name)
    best = np.full(len(decisions), np.inf)
    for _ in range(repeat):
        for k, (request, reports, ledger, now) in enumerate(decisions):
            started = time.perf_counter()
            router.route(request, reports, ledger, now)
            best[k] = min(best[k], time.perf_counter() - started)
    return best


def time_ledger(decisions: list[Decision]) -> float:
    """Mean seconds of the ledger's `sent_to` (what a router's caller records per request)."""
    started = time.perf_counter()
    for request, reports, ledger, now in decisions:
        ledger.sent_to(next(iter(reports)), request, now)
    return (time.perf_counter() - started) / len(decisions)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, nargs="+", default=[4, 16])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--load", type=float, default=0.9)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--period", type=float, default=0.0)
    args = parser.parse_args()
    reports = f"reports {args.period:g} s apart" if args.period else "fresh reports"
    print(f"router cost per request (µs), slidingserve+ replicas on mixed-v1, {reports}")
    print(f"{'replicas':>8}  {'router':<13} {'p50':>8} {'p99':>8}")
    for n in args.replicas:
        spy = capture(n, args.requests, args.load, args.seed, args.period)
        for name in names():
            seconds = time_router(name, spy.decisions, args.repeat)
            p50, p99 = np.percentile(seconds, [50, 99]) * 1e6
            print(f"{n:>8}  {name:<13} {p50:>8.1f} {p99:>8.1f}")
        made = np.asarray(spy.report_seconds) * 1e6
        if len(made):
            print(
                f"{n:>8}  one replica's report: p50 {np.percentile(made, 50):.1f} µs, p99 "
                f"{np.percentile(made, 99):.1f} µs ({len(made)} made anew)"
            )
        print(
            f"{n:>8}  ledger sent_to: {time_ledger(spy.decisions) * 1e6:.1f} µs; "
            f"{len(spy.decisions)} decisions"
        )


if __name__ == "__main__":
    main()
