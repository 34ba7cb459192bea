"""What a router sent since each replica's report: the state a router's caller keeps.

A router is a pure function of (request, reports, ledger); the caller keeps the `Ledger`
between decisions, as an engine keeps a policy's state: `sent` after each request it sent,
`with_reports` when reports arrive. A report counts every request its replica had received
when it was made, so the ledger keeps only what was sent to a replica at or after its report
(`Sent.at` ≥ `made_at`): the requests a router adds to what the report says.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import attrs

from slidingpolicy import _validate
from slidingpolicy.records.request import Request
from slidingpolicy.routing.replica_report import ReplicaReport


@attrs.frozen(slots=True)
class Sent:
    """One request sent: to which replica, when, its prompt tokens and its TTFT deadline."""

    replica: str
    at: float
    tokens: int
    deadline: float


@attrs.frozen(slots=True)
class Ledger:
    """A router's memory: what it sent since each report, the last replica it sent to, how
    many decisions it made, and the seed of its draws (`draws.pick`)."""

    seed: int = 0
    sent: tuple[Sent, ...] = ()
    last: str | None = None
    decisions: int = 0

    def __attrs_post_init__(self) -> None:
        _validate.integer("router ledger", "seed", self.seed, 0)
        _validate.integer("router ledger", "decisions", self.decisions, 0)

    def sent_to(self, replica: str, request: Request, at: float) -> Ledger:
        """The ledger after `request` was sent to `replica` at `at`."""
        entry = Sent(replica, at, request.remaining_prefill, request.deadline)
        return attrs.evolve(
            self, sent=(*self.sent, entry), last=replica, decisions=self.decisions + 1
        )

    def decided(self) -> Ledger:
        """The ledger after a decision that sent nothing (an early notice)."""
        return attrs.evolve(self, decisions=self.decisions + 1)

    def with_reports(self, reports: Mapping[str, ReplicaReport]) -> Ledger:
        """The ledger once `reports` are known: only what each replica received after its
        report was made (a replica with no report keeps nothing)."""
        kept = tuple(
            s for s in self.sent if s.replica in reports and s.at >= reports[s.replica].made_at
        )
        return self if len(kept) == len(self.sent) else attrs.evolve(self, sent=kept)

    def tokens(self) -> dict[str, int]:
        """Prompt tokens sent to each replica since its report (a replica sent none is not
        listed)."""
        totals: dict[str, int] = {}
        for s in self.sent:
            totals[s.replica] = totals.get(s.replica, 0) + s.tokens
        return totals

    def arrivals(self, due_by: float = math.inf) -> dict[str, list[tuple[float, int]]]:
        """(time, prompt tokens) of the requests due by `due_by` sent to each replica since
        its report, in the order sent (a replica sent none is not listed)."""
        by_replica: dict[str, list[tuple[float, int]]] = {}
        for s in self.sent:
            if s.deadline <= due_by:
                by_replica.setdefault(s.replica, []).append((s.at, s.tokens))
        return by_replica

    def counts(self) -> dict[str, int]:
        """Requests sent to each replica since its report (a replica sent none is not listed)."""
        totals: dict[str, int] = {}
        for s in self.sent:
            totals[s.replica] = totals.get(s.replica, 0) + 1
        return totals
