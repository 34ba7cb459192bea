"""The router protocol: a pure function of (request, reports, ledger) to a `Route`.

A router never keeps state of its own: what it sent since each report is the `Ledger` its
caller keeps (as an engine keeps a policy's state), and its draws are functions of the
ledger's seed and decision count (`draws`), so the same inputs always give the same route.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Protocol

import attrs

from slidingpolicy import _validate
from slidingpolicy.errors import InvalidRecordError
from slidingpolicy.records.request import Request
from slidingpolicy.routing.ledger import Ledger
from slidingpolicy.routing.replica_report import ReplicaReport

NO_REPLICA_NOTICE = "slidingpolicy found no replica for request"
"""How the reason a router gives for an early notice begins (`Route.notice`): a client reads
it as it reads a replica's give-up notice, and may retry elsewhere."""


@attrs.frozen(slots=True)
class Route:
    """Where a request goes: a replica, or an early notice that none can meet it.

    - `replica`: the replica's id (one of the reports'), or None with a notice.
    - `notice`: why no replica takes it (begins with `NO_REPLICA_NOTICE`), or None.
    - `predicted`: when the router predicts its first token there (seconds; None for a
      router that predicts none).
    """

    replica: str | None
    notice: str | None = None
    predicted: float | None = None

    def __attrs_post_init__(self) -> None:
        if (self.replica is None) == (self.notice is None):
            raise InvalidRecordError(
                "route", "replica", "names a replica, or else the route gives a notice"
            )
        if self.predicted is not None:
            _validate.finite("route", "predicted", self.predicted)


class Router(Protocol):
    """A router: `route` a request given the replicas' reports and the caller's ledger."""

    @property
    def name(self) -> str:
        """The registry name, e.g. "slo-aware"."""
        ...

    def route(
        self,
        request: Request,
        reports: Mapping[str, ReplicaReport],
        ledger: Ledger,
        now: float,
    ) -> Route:
        """Where `request` goes at `now`: one of `reports`' replicas, or a notice."""
        ...


def replicas(router: str, reports: Mapping[str, ReplicaReport]) -> list[str]:
    """The replicas of `reports` in order (by id); InvalidRecordError when there are none."""
    if not reports:
        raise InvalidRecordError(
            f"router {router!r}", "reports", "is empty: no replica to route to"
        )
    return sorted(reports)


def no_replica_notice(request: Request, late_by: float, count: int) -> str:
    """The reason of an early notice: how late the best of `count` replicas would be."""
    if math.isinf(late_by):
        return (
            f"{NO_REPLICA_NOTICE} {request.id!r}: none of {count} replicas can run its prefill "
            "now; retry it later or elsewhere"
        )
    return (
        f"{NO_REPLICA_NOTICE} {request.id!r}: its first token would come {late_by:.1f} s after "
        f"its TTFT deadline at the best of {count} replicas; retry it later or elsewhere"
    )
