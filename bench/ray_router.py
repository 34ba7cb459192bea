"""The Ray Serve router's own cost per request: `SloAwareRequestRouter.choose_replicas` (read
each replica's routing stats as a report, read the request's body, route, keep the ledger
in `on_request_routed`) against Ray's default `PowerOfTwoChoicesRequestRouter.choose_replicas`,
on fake replicas (no cluster, no actor call: Ray's probes of queue lengths and its actor calls
come on top of either, and are not measured).

Each replica's stats hold a report of `--ahead` deadlines ahead (as a busy replica's would);
reports are made anew every `--between` requests, the ledger growing between them as it
does between a replica's reports. Prints p50 and p99 per request, asserts nothing:
`python bench/ray_router.py [--replicas 2,4,16] [--requests 4000] [--between 50]`
(the Ray adapter's environment: adapters/ray).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import random
import time
from typing import Any

import numpy as np
from ray.serve._private.common import DeploymentHandleSource, DeploymentID, ReplicaID
from ray.serve._private.request_router.pow_2_router import PowerOfTwoChoicesRequestRouter

# The core's mypy runs without the Ray adapter; the adapter's CI step type-checks these for real.
from slidingpolicy_ray.choice import stats_of  # type: ignore[import-not-found, unused-ignore]
from slidingpolicy_ray.router import (  # type: ignore[import-not-found, unused-ignore]
    SloAwareRequestRouter,
)
from slidingpolicy_ray.testing import (  # type: ignore[import-not-found, unused-ignore]
    FakeReplica,
    pending,
)

from slidingpolicy.routing import ReplicaReport

DEPLOYMENT = DeploymentID(name="EngineReplica", app_name="bench")


def _report(now: float, ahead: int, rng: random.Random) -> ReplicaReport:
    deadlines = sorted(now + rng.uniform(0.1, 20.0) for _ in range(ahead))
    points = tuple((d, 200 * (i + 1)) for i, d in enumerate(deadlines))
    tokens = 200 * ahead
    return ReplicaReport(now, now, ahead, tokens, 16, 0.05, rng.uniform(4000, 8000), points)


def _refresh(replicas: list[FakeReplica], ahead: int, rng: random.Random) -> None:
    now = time.time()
    for replica in replicas:
        replica.routing_stats = stats_of(_report(now, ahead, rng))


async def _measure(kind: str, n: int, requests: int, between: int, ahead: int) -> list[float]:
    rng = random.Random(0)
    replicas = [FakeReplica(ReplicaID(f"r{i}", DEPLOYMENT), {}) for i in range(n)]
    _refresh(replicas, ahead, rng)
    options = {"deployment_id": DEPLOYMENT, "handle_source": DeploymentHandleSource.UNKNOWN}
    router: Any
    if kind == "slo-aware":
        router = SloAwareRequestRouter(**options)  # type: ignore[no-untyped-call, unused-ignore]
        router.initialize_state(router="slo-aware")
    else:
        router = PowerOfTwoChoicesRequestRouter(**options)  # type: ignore[no-untyped-call]
    router.update_replicas(replicas)
    candidates = router._replicas_list
    times = []
    for i in range(requests):
        if i % between == 0:
            _refresh(replicas, ahead, rng)
        body = {"prompt": list(range(rng.randint(50, 2000))), "max_tokens": 64,
                "vllm_xargs": {"ttft_slo": rng.choice([0.5, 3.0, 15.0])}}  # fmt: skip
        request = pending([body], f"q{i}")
        start = time.perf_counter()
        ranked = await router.choose_replicas(candidates, request)
        router.on_request_routed(request, ranked[0][0].replica_id, None)
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    """Print each router's cost per request at each replica count."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", default="2,4,16")
    parser.add_argument("--requests", type=int, default=4000)
    parser.add_argument("--between", type=int, default=50)
    parser.add_argument("--ahead", type=int, default=16)
    arguments = parser.parse_args()
    logging.getLogger("ray.serve").setLevel(logging.WARNING)
    print("replicas  router                 p50 µs   p99 µs")
    for n in (int(part) for part in arguments.replicas.split(",")):
        for kind in ("power-of-two (Ray)", "slo-aware"):
            times = asyncio.run(_measure(kind, n, arguments.requests, arguments.between,
                                         arguments.ahead))  # fmt: skip
            p50, p99 = (np.percentile(times, q) * 1e6 for q in (50, 99))
            print(f"{n:>8}  {kind:<20} {p50:>8.1f} {p99:>8.1f}")


if __name__ == "__main__":
    main()
