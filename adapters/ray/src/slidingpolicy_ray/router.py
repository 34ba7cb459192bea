"""The SLO-aware router as a Ray Serve `RequestRouter` (`ray.serve.request_router`, alpha).

Ray Serve asks a request router to rank the replicas for each request (`choose_replicas`):
this one reads each replica's report from the routing stats the replica publishes
(`record_routing_stats`, polled every `request_routing_stats_period_s`), the request's
prompt tokens and SLOs from its body, and runs a `slidingpolicy.routing` router by name on
them with the `Ledger` of what it sent to each replica since its report
(`on_request_routed`). Ray then sends the request to the first replica of the ranking that
has room (`max_ongoing_requests`), the others in order after it. Where a request is not a
completion body or a replica has published no report yet, it ranks as Ray's default router
does (power of two choices, which it extends). A replica whose actor died is dropped, with
what the ledger held for it (`on_replica_actor_died`).

    RequestRouterConfig(
        request_router_class=SloAwareRequestRouter,
        request_router_kwargs={"router": "slo-aware", "ttft_slo": 3.0, "tbt_slo": 0.1},
        request_routing_stats_period_s=0.5,
    )
"""

from __future__ import annotations

import logging
import math
import time
from typing import Any

import attrs
from ray.serve._private.request_router.pow_2_router import PowerOfTwoChoicesRequestRouter
from ray.serve.request_router import PendingRequest, ReplicaID, RunningReplica
from slidingpolicy import Request, Slo
from slidingpolicy.routing import Ledger, ReplicaReport, Router, from_label

from slidingpolicy_ray.choice import choose, report_in, request_of

logger = logging.getLogger("ray.serve")

RANKED = "slidingpolicy-ray: requests ranked"
"""How the router's log line of its counts begins (at 1, 10, 100, ... decisions)."""


class SloAwareRequestRouter(PowerOfTwoChoicesRequestRouter):
    """A `slidingpolicy.routing` router inside Ray Serve (module docstring)."""

    def initialize_state(
        self, router: str = "slo-aware", ttft_slo: float = 3.0, tbt_slo: float = 0.1, **_: Any
    ) -> None:
        """The router label (``name[key=value,...]``) and the SLOs of a request that
        carries none (the replicas' defaults): `RequestRouterConfig.request_router_kwargs`."""
        self.router: Router = from_label(router)[0]
        self.default_slo = Slo(ttft_slo, tbt_slo)
        self.ledger = Ledger()
        self.requests: dict[str, Request] = {}
        """The record of each request ranked and not yet routed, by Ray's internal id."""
        self.read: dict[str, tuple[object, ReplicaReport]] = {}
        """Each replica's report as last read, with the stats it was read from: stats change
        once a period, requests come many times as often."""
        self.decisions = 0
        """Rankings asked for."""
        self.fallbacks = 0
        """Requests ranked as Ray's default router ranks them (module docstring)."""
        self.why = "none"
        """Why the last such request was."""

    async def choose_replicas(
        self,
        candidate_replicas: list[RunningReplica],
        pending_request: PendingRequest | None = None,
    ) -> list[list[RunningReplica]]:
        """The candidates ranked by the router, each alone in its rank (the first its
        choice); as Ray's default router where it cannot (module docstring)."""
        ranked = self.rank(candidate_replicas, pending_request)
        self.decisions += 1
        if ranked is None:
            self.fallbacks += 1
        if math.log10(self.decisions).is_integer():
            ours = self.decisions - self.fallbacks
            logger.info("%s by %s: %d, as Ray's default router ranks them: %d (last: %s)",
                        RANKED, self.router.name, ours, self.fallbacks, self.why)  # fmt: skip
        if ranked is None:
            chosen: list[list[RunningReplica]] = await super().choose_replicas(
                candidate_replicas, pending_request
            )
            return chosen
        return [[replica] for replica in ranked]

    def rank(
        self, candidates: list[RunningReplica], pending: PendingRequest | None
    ) -> list[RunningReplica] | None:
        """The router's ranking of `candidates` for `pending`, None where it has none."""
        if pending is None or not candidates or not pending.args:
            self.why = "no request, candidate or argument"
            return None
        reports: dict[str, ReplicaReport] = {}
        by_id: dict[str, RunningReplica] = {}
        for replica in candidates:
            key, stats = replica.replica_id.unique_id, replica.routing_stats
            last = self.read.get(key)
            if last is not None and last[0] is stats:
                report: ReplicaReport | None = last[1]
            else:
                report = report_in(stats or {})
                if report is not None:
                    self.read[key] = (stats, report)
            if report is None:
                self.why = f"replica {key} has no report ({str(stats)[:80]})"
                return None
            reports[key], by_id[key] = report, replica
        internal = pending.metadata.internal_request_id
        request = request_of(pending.args[0], internal, pending.created_at, self.default_slo)
        if request is None:
            self.why = f"the request is not a completion body ({str(pending.args[0])[:80]})"
            return None
        choice = choose(self.router, request, reports, self.ledger, time.time())
        self.ledger = choice.ledger
        self.requests[internal] = request
        return [by_id[key] for key in choice.ranked]

    def on_request_routed(
        self, pending_request: PendingRequest, replica_id: ReplicaID, result: Any
    ) -> None:
        """The request went to `replica_id`: the ledger counts it there."""
        request = self.requests.pop(pending_request.metadata.internal_request_id, None)
        if request is not None:
            self.ledger = self.ledger.sent_to(replica_id.unique_id, request, time.time())

    def on_replica_actor_died(self, replica_id: ReplicaID) -> None:
        """Drop the replica, and what the ledger held for it."""
        super().on_replica_actor_died(replica_id)
        gone = replica_id.unique_id
        self.read.pop(gone, None)
        kept = tuple(s for s in self.ledger.sent if s.replica != gone)
        if len(kept) != len(self.ledger.sent):
            self.ledger = attrs.evolve(self.ledger, sent=kept)
