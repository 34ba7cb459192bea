"""Round robin: each request to the replica after the one the last went to, by id."""

from __future__ import annotations

import bisect
from collections.abc import Mapping
from typing import ClassVar

import attrs

from slidingpolicy.records.request import Request
from slidingpolicy.routing.ledger import Ledger
from slidingpolicy.routing.replica_report import ReplicaReport
from slidingpolicy.routing.router import Route, replicas


@attrs.frozen(slots=True)
class RoundRobin:
    """Round robin over the replicas that report, in order of their ids: the one after the
    last replica sent to (`Ledger.last`), so that a replica that leaves or joins moves no
    other's turn. Reads nothing of the reports but who sends them."""

    name: ClassVar[str] = "round-robin"

    def route(
        self,
        request: Request,
        reports: Mapping[str, ReplicaReport],
        ledger: Ledger,
        now: float,
    ) -> Route:
        """The replica after `ledger.last` (the first one when it is the last, or none)."""
        ordered = replicas(self.name, reports)
        if ledger.last is None:
            return Route(ordered[0])
        after = bisect.bisect_right(ordered, ledger.last)
        return Route(ordered[after % len(ordered)])
