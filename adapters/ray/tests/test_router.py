"""The router inside Ray Serve's `RequestRouter` interface, on fake replicas (no cluster):
it ranks by the replicas' reports, counts what it routed, falls back to Ray's default where
a replica has no report or a request no body, and drops a replica whose actor died."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine
from typing import Any

from ray.serve._private.common import DeploymentHandleSource, DeploymentID, ReplicaID
from ray.serve.request_router import PendingRequest
from slidingpolicy.routing import ReplicaReport

from slidingpolicy_ray.choice import stats_of
from slidingpolicy_ray.router import SloAwareRequestRouter
from slidingpolicy_ray.testing import FakeReplica, pending

DEPLOYMENT = DeploymentID(name="EngineReplica", app_name="test")


def _replica(name: str, report: ReplicaReport | None) -> FakeReplica:
    return FakeReplica(ReplicaID(name, DEPLOYMENT), stats_of(report))


def _report(tokens: int, rate: float, due_in: float) -> ReplicaReport:
    now = time.time()
    ahead = ((now + due_in, tokens),) if tokens else ()
    return ReplicaReport(now, now, 1 if tokens else 0, tokens, 0, float("inf"), rate, ahead)


def _router(*replicas: FakeReplica) -> SloAwareRequestRouter:
    router = SloAwareRequestRouter(  # type: ignore[no-untyped-call]
        deployment_id=DEPLOYMENT, handle_source=DeploymentHandleSource.UNKNOWN
    )
    router.initialize_state(router="slo-aware", ttft_slo=3.0, tbt_slo=0.1)
    router.update_replicas(list(replicas))  # type: ignore[arg-type]
    return router


def _body(tokens: int, ttft: float) -> dict[str, Any]:
    return {"prompt": list(range(1, tokens + 1)), "max_tokens": 2, "vllm_xargs": {"ttft_slo": ttft}}


async def _choose(router: SloAwareRequestRouter, request: PendingRequest) -> list[list[Any]]:
    candidates = router._replicas_list
    chosen: list[list[Any]] = await router.choose_replicas(candidates, request)
    return chosen


def _run(test: Callable[[], Coroutine[Any, Any, None]]) -> Callable[[], None]:
    """A test run on an event loop (Ray's router needs one)."""

    def run() -> None:
        asyncio.run(test())

    run.__name__, run.__doc__ = test.__name__, test.__doc__
    return run


@_run
async def test_a_request_is_ranked_by_its_predicted_first_token() -> None:
    deep = _replica("deep", _report(12000, 8000.0, 30.0))  # long-deadline work, fast
    short = _replica("short", _report(4000, 4000.0, 1.0))  # work due soon, half as fast
    router = _router(deep, short)
    ranked = await _choose(router, pending([_body(2000, 3.0)], "a"))
    assert [[r.replica_id.unique_id for r in rank] for rank in ranked] == [["deep"], ["short"]]
    assert (router.decisions, router.fallbacks) == (1, 0)


@_run
async def test_what_was_routed_counts_until_the_next_report() -> None:
    one, two = _replica("one", _report(0, 1000.0, 0.0)), _replica("two", _report(0, 1000.0, 0.0))
    router = _router(one, two)
    first = pending([_body(900, 3.0)], "a")
    assert (await _choose(router, first))[0][0] is one
    router.on_request_routed(first, one.replica_id, None)
    assert (await _choose(router, pending([_body(900, 3.0)], "b")))[0][0] is two
    assert [s.replica for s in router.ledger.sent] == ["one"]


@_run
async def test_a_replica_without_a_report_or_a_request_without_a_body_is_ranked_as_ray_does() -> (
    None
):
    router = _router(_replica("one", _report(0, 1000.0, 0.0)), _replica("two", None))
    ranked = await _choose(router, pending([_body(10, 3.0)], "a"))
    assert len(ranked) == 1
    assert len(ranked[0]) == 2  # power of two choices: both candidates, Ray probes them
    router = _router(_replica("one", _report(0, 1000.0, 0.0)))
    await _choose(router, pending(["not a body"], "b"))
    assert (router.decisions, router.fallbacks) == (1, 1)


@_run
async def test_a_replica_whose_actor_died_is_dropped_with_what_the_ledger_held_for_it() -> None:
    one, two = _replica("one", _report(0, 1000.0, 0.0)), _replica("two", _report(0, 1000.0, 0.0))
    router = _router(one, two)
    for name, replica in (("a", one), ("b", two)):
        request = pending([_body(100, 3.0)], name)
        await _choose(router, request)
        router.on_request_routed(request, replica.replica_id, None)
    router.on_replica_actor_died(one.replica_id)
    assert [s.replica for s in router.ledger.sent] == ["two"]
    assert [r.replica_id.unique_id for r in router._replicas_list] == ["two"]
    ranked = await _choose(router, pending([_body(100, 3.0)], "c"))
    assert [[r.replica_id.unique_id for r in rank] for rank in ranked] == [["two"]]
