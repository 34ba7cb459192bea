"""Routing across replicas: what a replica reports, and routers that read the reports.

A replica computes its `ReplicaReport` from its own state and predictor (`report_of`); a
router is a pure function of (request, reports, `Ledger`) to a `Route`: a replica, or an
early notice that none can meet the request. The offline engine runs a cluster of replicas
behind any router (`slidingpolicy.cluster`); a real replica reports alike, from its own
state (docs/cluster.md).
"""

from slidingpolicy.routing.ledger import Ledger, Sent
from slidingpolicy.routing.replica_report import AHEAD_POINTS, ReplicaReport
from slidingpolicy.routing.reporting import prefill_pace, report_from, report_of
from slidingpolicy.routing.router import NO_REPLICA_NOTICE, Route, Router
from slidingpolicy.routing.router_registry import (
    by_name,
    from_label,
    names,
    options_of,
    register,
    summary,
)

__all__ = [
    "AHEAD_POINTS",
    "NO_REPLICA_NOTICE",
    "Ledger",
    "ReplicaReport",
    "Route",
    "Router",
    "Sent",
    "by_name",
    "from_label",
    "names",
    "options_of",
    "prefill_pace",
    "register",
    "report_from",
    "report_of",
    "summary",
]
