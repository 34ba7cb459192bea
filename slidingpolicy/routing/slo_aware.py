"""SLO-aware routing, from the replicas' own reports: each request to the replica where its
first token is predicted soonest (`ReplicaReport.first_token`: the work due before its TTFT
deadline ahead of it there, at the prefill rate the replica's predictor gives beside its
decodes), among the replicas that would serve it well: its first token by its deadline,
and decodes that keep their pace (`ReplicaReport.keeps_pace`: a replica whose decodes overrun
their TBT SLO prefills at its whole budget, so it looks fast while every request there
decodes late). With `pick="fewest"`, the one of those with the fewest requests in flight
instead (the earliest first token the tie-break). Where no replica serves it well, the
earliest first token among the replicas whose decodes keep pace: a late first token there
costs that request alone, where the replica that falls behind would make it decode late
too. Where no replica's decodes keep pace, the one with the fewest requests in flight: each
prefills at its whole budget, so the rates its report gives say how fast its predictor
thinks it prefills, not how late its decodes run, and every request sent there adds a
decode that makes them later. When every replica is predicted late and the operator asks
for it, the request gets an early notice instead, so that its client can go elsewhere at
once rather than wait for a token that comes late.
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

Pick = Literal["earliest", "fewest"]


@attrs.frozen(slots=True)
class SloAware:
    """The earliest predicted first token among the replicas that serve a request well, or
    the fewest in flight of them (module docstring); ties go to the fewer prompt tokens to
    prefill, then the first by id.

    - `notice`: when every replica is predicted to miss the request's TTFT deadline, give it
      an early notice (`Route.notice`) instead of a replica.
    - `pick`: among the replicas that serve the request well, the "earliest" first token or
      the "fewest" requests in flight.
    """

    notice: bool = False
    pick: Pick = "earliest"
    name: ClassVar[str] = "slo-aware"

    def __attrs_post_init__(self) -> None:
        _validate.flag(f"router {self.name!r}", "notice", self.notice)
        if self.pick not in ("fewest", "earliest"):
            raise _validate.fail(
                f"router {self.name!r}", "pick", f"={self.pick!r} is not one of earliest, fewest"
            )

    def route(
        self,
        request: Request,
        reports: Mapping[str, ReplicaReport],
        ledger: Ledger,
        now: float,
    ) -> Route:
        """The replica that serves it well first, or the earliest first token where decodes
        keep pace, or the fewest in flight, or a notice (module docstring)."""
        ordered = replicas(self.name, reports)
        deadline, tokens = request.deadline, request.remaining_prefill
        due, sent = ledger.arrivals(deadline), ledger.tokens()

        def rank(replica: str) -> tuple[float, int]:
            report = reports[replica]
            first = report.first_token(tokens, deadline, now, due.get(replica, ()))
            return first, report.queued_tokens + sent.get(replica, 0)

        def fewest(among: list[str]) -> str:
            counts = ledger.counts()
            return min(among, key=lambda r: (in_flight(reports[r], counts.get(r, 0)), *ranks[r]))

        ranks = {replica: rank(replica) for replica in ordered}
        paced = [r for r in ordered if reports[r].keeps_pace]
        well = [r for r in paced if ranks[r][0] <= deadline]
        if not well:
            late_by = min(first for first, _ in ranks.values()) - deadline
            if late_by > 0.0 and self.notice:
                return Route(None, no_replica_notice(request, late_by, len(ordered)))
            best = min(paced, key=ranks.__getitem__) if paced else fewest(ordered)
        elif self.pick == "fewest":
            best = fewest(well)
        else:
            best = min(well, key=ranks.__getitem__)
        predicted = ranks[best][0]
        return Route(best, predicted=predicted if predicted < float("inf") else None)
