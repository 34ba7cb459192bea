"""The ledger keeps what a router sent since each report: a report made after a request was
sent counts it (the ledger lets it go), one made before does not (the ledger keeps it); a
report that counts the requests its replica met keeps what the replica has not met yet,
until its TTFT deadline passes."""

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
    met=st.dictionaries(st.sampled_from("ab"), st.integers(0, 12)),
)
def test_a_report_lets_go_of_what_it_counts(
    sent: list[tuple[str, float, int]], made: dict[str, float], met: dict[str, int]
) -> None:
    ledger = Ledger()
    for replica, at, tokens in sorted(sent, key=lambda s: s[1]):
        ledger = ledger.sent_to(replica, Request("r", at, tokens, 0, 0, 3.0, 0.1), at)
    reports = {
        r: ReplicaReport(m, m, 0, 0, 0, math.inf, 1.0, met=met.get(r)) for r, m in made.items()
    }
    kept = ledger.with_reports(reports)
    numbers: dict[str, int] = {}
    expected = []
    for s in ledger.sent:
        numbers[s.replica] = numbers.get(s.replica, 0) + 1
        assert s.number == numbers[s.replica]
        if s.replica not in made:
            continue
        unmet = s.replica in met and s.number > met[s.replica] and s.deadline >= made[s.replica]
        if s.at >= made[s.replica] or unmet:
            expected.append(s)
    assert kept.sent == tuple(expected)
    assert kept.tokens() == {
        r: sum(s.tokens for s in kept.sent if s.replica == r)
        for r in {s.replica for s in kept.sent}
    }
    assert kept.decisions == len(sent)
    assert kept.last == ledger.last


def test_a_request_sent_before_a_report_stays_until_the_replica_has_met_it() -> None:
    # sent at 1.0, the replica's snapshot at 1.5 had not met it yet (it was still on its
    # way): the report does not count it, so the ledger must
    ledger = Ledger().sent_to("a", Request("r1", 1.0, 400, 0, 0, 3.0, 0.1), 1.0)
    before = ReplicaReport(1.5, 1.5, 0, 0, 0, math.inf, 1.0, met=0)
    assert ledger.with_reports({"a": before}).tokens() == {"a": 400}
    after = ReplicaReport(2.0, 2.0, 1, 400, 0, math.inf, 1.0, ((4.0, 400),), met=1)
    assert ledger.with_reports({"a": after}).sent == ()
    never = ReplicaReport(4.5, 4.5, 0, 0, 0, math.inf, 1.0, met=0)
    assert ledger.with_reports({"a": never}).sent == ()
    uncounted = ReplicaReport(1.5, 1.5, 0, 0, 0, math.inf, 1.0)
    assert ledger.with_reports({"a": uncounted}).sent == ()


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
