"""Power of two choices (Mitzenmacher, "The power of two choices in randomized load
balancing", IEEE TPDS 2001), by queue length: Ray Serve's default router
(`PowerOfTwoChoicesRequestRouter`), which draws two replicas at random and sends to the one
with fewer requests in flight."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import attrs

from slidingpolicy.records.request import Request
from slidingpolicy.routing.draws import two_of
from slidingpolicy.routing.ledger import Ledger
from slidingpolicy.routing.replica_report import ReplicaReport
from slidingpolicy.routing.router import Route, replicas


def in_flight(report: ReplicaReport, sent: int) -> int:
    """Requests a replica holds (waiting, prefilling, decoding) and those sent to it since
    its report: Ray's queue length (a replica's ongoing requests, plus the router's sends)."""
    return report.queued + report.decoding + sent


@attrs.frozen(slots=True)
class PowerOfTwo:
    """Two distinct replicas drawn uniformly (`draws.two_of`, from the ledger's seed and
    decision count); the one with fewer requests in flight (`in_flight`), the first drawn
    on a tie."""

    name: ClassVar[str] = "power-of-two"

    def route(
        self,
        request: Request,
        reports: Mapping[str, ReplicaReport],
        ledger: Ledger,
        now: float,
    ) -> Route:
        """The shorter queue of two replicas drawn at random."""
        ordered = replicas(self.name, reports)
        if len(ordered) == 1:
            return Route(ordered[0])
        i, j = two_of(ledger.seed, ledger.decisions, len(ordered))
        sent = ledger.counts()
        first, second = ordered[i], ordered[j]
        queue_first = in_flight(reports[first], sent.get(first, 0))
        queue_second = in_flight(reports[second], sent.get(second, 0))
        return Route(second if queue_second < queue_first else first)
