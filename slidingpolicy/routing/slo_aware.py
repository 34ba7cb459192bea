"""SLO-aware routing, from the replicas' own reports: each request to a replica where its
first token is predicted by its TTFT deadline (`ReplicaReport.first_token`: the work due
before the deadline ahead of it there, at the prefill rate the replica's predictor gives
beside its decodes). Among those on time, the one with the fewest requests in flight
(`pick="fewest"`): a request that meets its deadline anywhere is best spent evening the
replicas' decodes, which every later step pays for; the earliest predicted first token is
the tie-break, and the whole rule where no replica is on time. `pick="earliest"` is the
earliest predicted first token always. A replica predicted late is chosen only when every
one is; then, where the operator asks for it, the request gets an early notice instead, so
that its client can go elsewhere at once rather than wait for a token that comes late.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar, Literal

import attrs

from slidingpolicy import _validate
from slidingpolicy.records.request import Request
from slidingpolicy.routing.ledger import Ledger
from slidingpolicy.routing.power_of_two import in_flight
from slidingpolicy.routing.replica_report import ReplicaReport
from slidingpolicy.routing.router import Route, no_replica_notice, replicas

Pick = Literal["fewest", "earliest"]


@attrs.frozen(slots=True)
class SloAware:
    """A replica predicted on time, or the earliest predicted first token (module
    docstring); ties go to the fewer prompt tokens to prefill, then the first by id.

    - `notice`: when every replica is predicted to miss the request's TTFT deadline, give it
      an early notice (`Route.notice`) instead of a replica.
    - `pick`: among the replicas predicted on time, "fewest" requests in flight or the
      "earliest" first token.
    """

    notice: bool = False
    pick: Pick = "fewest"
    name: ClassVar[str] = "slo-aware"

    def __attrs_post_init__(self) -> None:
        _validate.flag(f"router {self.name!r}", "notice", self.notice)
        if self.pick not in ("fewest", "earliest"):
            raise _validate.fail(
                f"router {self.name!r}", "pick", f"={self.pick!r} is not one of fewest, earliest"
            )

    def route(
        self,
        request: Request,
        reports: Mapping[str, ReplicaReport],
        ledger: Ledger,
        now: float,
    ) -> Route:
        """A replica on time, or the earliest first token, or a notice (class doc)."""
        ordered = replicas(self.name, reports)
        deadline, tokens = request.deadline, request.remaining_prefill
        due, sent, counts = ledger.arrivals(deadline), ledger.tokens(), ledger.counts()

        def rank(replica: str) -> tuple[float, int]:
            report = reports[replica]
            first = report.first_token(tokens, deadline, now, due.get(replica, ()))
            return first, report.queued_tokens + sent.get(replica, 0)

        ranks = {replica: rank(replica) for replica in ordered}
        best = min(ordered, key=ranks.__getitem__)
        predicted = ranks[best][0]
        if predicted > deadline:
            if self.notice:
                return Route(None, no_replica_notice(request, predicted - deadline, len(ordered)))
        elif self.pick == "fewest":
            on_time = [replica for replica in ordered if ranks[replica][0] <= deadline]
            best = min(
                on_time,
                key=lambda r: (in_flight(reports[r], counts.get(r, 0)), *ranks[r]),
            )
            predicted = ranks[best][0]
        return Route(best, predicted=predicted if predicted < float("inf") else None)
