"""SLO-aware routing: each request to the replica where its first token is predicted to come
soonest, from the replicas' own reports (`ReplicaReport.first_token`): the work due before
its TTFT deadline ahead of it there, at the prefill rate the replica's predictor gives beside
its decodes. A replica predicted late is chosen only when every one is; then, where the
operator asks for it, the request gets an early notice instead, so that its client can go
elsewhere at once rather than wait for a token that comes late.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import attrs

from slidingpolicy import _validate
from slidingpolicy.records.request import Request
from slidingpolicy.routing.ledger import Ledger
from slidingpolicy.routing.replica_report import ReplicaReport
from slidingpolicy.routing.router import Route, no_replica_notice, replicas


@attrs.frozen(slots=True)
class SloAware:
    """The replica with the earliest predicted first token (module docstring); on a tie the
    fewer prompt tokens to prefill, then the first by id.

    - `notice`: when every replica is predicted to miss the request's TTFT deadline, give it
      an early notice (`Route.notice`) instead of a replica.
    """

    notice: bool = False
    name: ClassVar[str] = "slo-aware"

    def __attrs_post_init__(self) -> None:
        _validate.flag(f"router {self.name!r}", "notice", self.notice)

    def route(
        self,
        request: Request,
        reports: Mapping[str, ReplicaReport],
        ledger: Ledger,
        now: float,
    ) -> Route:
        """The replica of the earliest predicted first token, or a notice (class doc)."""
        ordered = replicas(self.name, reports)
        deadline, tokens = request.deadline, request.remaining_prefill
        due, sent = ledger.arrivals(deadline), ledger.tokens()

        def rank(replica: str) -> tuple[float, int]:
            report = reports[replica]
            first = report.first_token(tokens, deadline, now, due.get(replica, ()))
            return first, report.queued_tokens + sent.get(replica, 0)

        ranks = {replica: rank(replica) for replica in ordered}
        best = min(ordered, key=ranks.__getitem__)
        predicted = ranks[best][0]
        if predicted > deadline and self.notice:
            late_by = predicted - deadline
            return Route(None, no_replica_notice(request, late_by, len(ordered)))
        return Route(best, predicted=predicted if predicted < float("inf") else None)
