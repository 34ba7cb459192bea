"""What the client of a request finished alone is told: the policy gave it up
(`BatchPlan.given_up`, `give_up_after`), or the policy cannot represent it (its SLOs or its
counts make no `Request`). Each engine delivers the text in its own terms (an error event, a
finish reason); a client or a router tells them from any other end by how they begin."""

from __future__ import annotations

from collections.abc import Iterable

from slidingpolicy.errors import InvalidRecordError
from slidingpolicy.records.state import SchedulerState

GIVEN_UP_NOTICE = "slidingpolicy gave up request"
"""How the reason a request the policy gave up on is finished with begins."""

REFUSED_NOTICE = "slidingpolicy cannot schedule request"
"""How the reason a request the policy cannot represent is finished with begins."""

REFUSED = "request the policy cannot represent, finished alone"
"""The fault kind that counts such requests."""


def given_up_notice(state: SchedulerState, given_up: Iterable[str]) -> dict[str, str]:
    """The reason each request of `given_up` (ids in `state`) is finished with: how long ago
    its TTFT deadline passed, and that it may be retried elsewhere."""
    deadlines = {r.id: r.deadline for r in state.requests}
    return {
        rid: f"{GIVEN_UP_NOTICE} {rid!r}: its TTFT deadline passed "
        f"{state.now - deadlines[rid]:.1f} s ago (give_up_after); retry it elsewhere"
        for rid in given_up
    }


def refused_notice(request_id: str, error: InvalidRecordError) -> str:
    """The reason a request the policy cannot represent is finished with: the record's
    complaint, without the request's name twice."""
    problem = str(error).removeprefix(f"request {request_id!r}: ")
    return f"{REFUSED_NOTICE} {request_id!r}: {problem}"
