"""The ledger keeps what a router sent since each report: a report made after a request was
sent counts it (the ledger lets it go), one made before does not (the ledger keeps it)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slidingpolicy.errors import InvalidRecordError
from slidingpolicy.records.request import Request
from slidingpolicy.routing import Ledger, ReplicaReport, Sent


@given(
    sent=st.lists(
        st.tuples(st.sampled_from("abc"), st.floats(0.0, 10.0), st.integers(1, 100)), max_size=12
    ),
    made=st.dictionaries(st.sampled_from("ab"), st.floats(0.0, 10.0)),
)
def test_a_report_lets_go_of_what_it_counts(
    sent: list[tuple[str, float, int]], made: dict[str, float]
) -> None:
    ledger = Ledger()
    for replica, at, tokens in sorted(sent, key=lambda s: s[1]):
        ledger = ledger.sent_to(replica, Request("r", 0.0, tokens, 0, 0, 3.0, 0.1), at)
    reports = {r: ReplicaReport(m, m, 0, 0, 0, math.inf, 1.0) for r, m in made.items()}
    kept = ledger.with_reports(reports)
    assert kept.sent == tuple(
        s for s in ledger.sent if s.replica in made and s.at >= made[s.replica]
    )
    assert kept.tokens() == {
        r: sum(s.tokens for s in kept.sent if s.replica == r)
        for r in {s.replica for s in kept.sent}
    }
    assert kept.decisions == len(sent)
    assert kept.last == ledger.last


def test_a_ledger_counts_by_deadline() -> None:
    ledger = Ledger(sent=(Sent("a", 0.0, 10, 3.0), Sent("a", 1.0, 20, 9.0), Sent("b", 1.0, 5, 3.0)))
    assert ledger.arrivals(3.0) == {"a": [(0.0, 10)], "b": [(1.0, 5)]}
    assert ledger.arrivals() == {"a": [(0.0, 10), (1.0, 20)], "b": [(1.0, 5)]}
    assert ledger.tokens() == {"a": 30, "b": 5}
    assert ledger.counts() == {"a": 2, "b": 1}
    assert ledger.decided().decisions == 1


def test_a_bad_seed_is_refused() -> None:
    with pytest.raises(InvalidRecordError, match="router ledger: seed=-1 must be >= 0"):
        Ledger(seed=-1)
