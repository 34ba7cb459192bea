"""The router's part that needs no Ray: a request as a record, the replicas' reports on the
clock they share, and the choice among them; `router.SloAwareRequestRouter` runs it inside
Ray Serve.

Ray's replicas and routers are processes on machines of their own, and share only the wall
clock (`time.time`), so a replica publishes its report (`PolicyLoop.report`, on the loop's
monotonic clock) shifted onto the wall clock (`on_wall_clock`), and the router routes at the
wall clock's now. A request's SLOs are read from its body's ``vllm_xargs`` by the one reader
of SLOs on the wire (`slidingpolicy.embedding.slo_on_wire`), its prompt tokens from its
token-id ``prompt``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
from slidingpolicy import InvalidRecordError, Request, Slo
from slidingpolicy.embedding import slo_on_wire
from slidingpolicy.routing import Ledger, ReplicaReport, Router

REPORT = "report"
"""The key of a replica's routing stats that holds its report (`ReplicaReport.to_dict`)."""


def on_wall_clock(report: ReplicaReport, shift: float) -> ReplicaReport:
    """`report` with its times (made, free, each deadline ahead) moved by `shift` seconds:
    from a loop's clock onto the wall clock, shift being the wall clock less the loop's."""
    ahead = tuple((deadline + shift, tokens) for deadline, tokens in report.ahead)
    return attrs.evolve(
        report, made_at=report.made_at + shift, free_at=report.free_at + shift, ahead=ahead
    )


def stats_of(report: ReplicaReport | None) -> dict[str, Any]:
    """What a replica publishes through `record_routing_stats`: its report, or nothing yet."""
    return {} if report is None else {REPORT: report.to_dict()}


def report_in(stats: Mapping[str, Any]) -> ReplicaReport | None:
    """The report a replica's routing stats hold; None when they hold none, or a malformed
    one (the router then chooses as Ray's default does)."""
    data = stats.get(REPORT)
    if data is None:
        return None
    try:
        return ReplicaReport.from_dict(data)
    except (InvalidRecordError, TypeError):
        return None


def request_of(body: object, request_id: str, at: float, default: Slo) -> Request | None:
    """The request a completion body (`slidingpolicy_transformers.server.parse_completion`'s
    shape) describes, arriving `at`, its SLOs `default` where it carries none; None when the
    body is not one (the replica's door answers it)."""
    if not isinstance(body, Mapping):
        return None
    prompt = body.get("prompt")
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], list):
        prompt = prompt[0]
    if not isinstance(prompt, list) or not prompt:
        return None
    try:
        slo = slo_on_wire(body.get("vllm_xargs"), default)
        return Request(request_id, at, len(prompt), 0, 0, slo.ttft, slo.tbt, slo.protected)
    except InvalidRecordError:
        return None


@attrs.frozen(slots=True)
class Choice:
    """A router's decision on one request: the replicas in order of preference (the first
    its choice), and the ledger to keep once the request was sent there."""

    ranked: tuple[str, ...]
    ledger: Ledger


def choose(
    router: Router,
    request: Request,
    reports: Mapping[str, ReplicaReport],
    ledger: Ledger,
    now: float,
) -> Choice:
    """`router`'s replica for `request` at `now` first, then the others by id. A Ray Serve
    router answers no request itself, so a route that is an early notice (no replica can
    meet the request) goes to the replica of the least prompt tokens queued, where the
    replica's own policy finishes it or gives it up with its notice."""
    kept = ledger.with_reports(reports)
    route = router.route(request, reports, kept, now)
    best = route.replica
    if best is None:
        sent = kept.tokens()
        best = min(sorted(reports), key=lambda r: reports[r].queued_tokens + sent.get(r, 0))
    others = tuple(r for r in sorted(reports) if r != best)
    return Choice((best, *others), kept)
