"""Least outstanding tokens: each request to the replica with the fewest prompt tokens still
to prefill, as routers that balance load by tokens rather than requests do."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import attrs

from slidingpolicy.records.request import Request
from slidingpolicy.routing.ledger import Ledger
from slidingpolicy.routing.power_of_two import in_flight
from slidingpolicy.routing.replica_report import ReplicaReport
from slidingpolicy.routing.router import Route, replicas


@attrs.frozen(slots=True)
class LeastTokens:
    """The replica with the fewest prompt tokens to prefill (`ReplicaReport.queued_tokens`,
    late requests' included, plus what was sent to it since its report); on a tie the fewer
    requests in flight, then the first by id."""

    name: ClassVar[str] = "least-tokens"

    def route(
        self,
        request: Request,
        reports: Mapping[str, ReplicaReport],
        ledger: Ledger,
        now: float,
    ) -> Route:
        """The replica with the least outstanding prefill."""
        ordered = replicas(self.name, reports)
        tokens, counts = ledger.tokens(), ledger.counts()

        def load(replica: str) -> tuple[int, int]:
            report = reports[replica]
            return (
                report.queued_tokens + tokens.get(replica, 0),
                in_flight(report, counts.get(replica, 0)),
            )

        return Route(min(ordered, key=load))
