"""What a router sent since each replica's report: the state a router's caller keeps.

A router is a pure function of (request, reports, ledger); the caller keeps the `Ledger`
between decisions, as an engine keeps a policy's state: `sent` after each request it sent,
`with_reports` when reports arrive. A report counts the requests its replica had met when it
was made, so the ledger keeps what was sent to a replica at or after its report (`Sent.at` ≥
`made_at`), and, where the report says how many requests its replica had met (`met`), those
sent before it that the replica had not met yet: a request on its way (an actor call, a
server's event loop, an engine's input queue) is in no snapshot. Each request sent to a
replica is numbered (`Sent.number`), so the n-th one is met once `met` ≥ n; one the replica
never meets (cancelled on its way) is let go once its TTFT deadline has passed.
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
    """One request sent: to which replica, when, its prompt tokens, its TTFT deadline, and
    how many this router had sent there with it (0: not numbered)."""

    replica: str
    at: float
    tokens: int
    deadline: float
    number: int = 0

    def counted_by(self, report: ReplicaReport) -> bool:
        """Whether `report` counts it (module docstring)."""
        if self.at >= report.made_at:
            return False
        met = report.met
        return met is None or self.number <= met or self.deadline < report.made_at


@attrs.frozen(slots=True)
class Ledger:
    """A router's memory: what it sent since each report, the last replica it sent to, how
    many decisions it made, and the seed of its draws (`draws.pick`)."""

    seed: int = 0
    sent: tuple[Sent, ...] = ()
    last: str | None = None
    decisions: int = 0
    numbers: tuple[tuple[str, int], ...] = ()
    """How many requests it sent to each replica, ever (the last `Sent.number` there)."""

    def __attrs_post_init__(self) -> None:
        _validate.integer("router ledger", "seed", self.seed, 0)
        _validate.integer("router ledger", "decisions", self.decisions, 0)

    def sent_to(self, replica: str, request: Request, at: float) -> Ledger:
        """The ledger after `request` was sent to `replica` at `at`."""
        numbers = dict(self.numbers)
        number = numbers[replica] = numbers.get(replica, 0) + 1
        entry = Sent(replica, at, request.remaining_prefill, request.deadline, number)
        return attrs.evolve(
            self,
            sent=(*self.sent, entry),
            last=replica,
            decisions=self.decisions + 1,
            numbers=tuple(numbers.items()),
        )

    def decided(self) -> Ledger:
        """The ledger after a decision that sent nothing (an early notice)."""
        return attrs.evolve(self, decisions=self.decisions + 1)

    def with_reports(self, reports: Mapping[str, ReplicaReport]) -> Ledger:
        """The ledger once `reports` are known: only what each report does not count
        (module docstring; a replica with no report keeps nothing)."""
        kept = tuple(
            s for s in self.sent if s.replica in reports and not s.counted_by(reports[s.replica])
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
