"""A report refuses what it cannot hold, naming the field; travels as JSON and back; and what
it says is due by a deadline is what it lists, or more once a long queue is merged (never
less), so that a router reading it never counts a replica freer than it is."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slidingpolicy.errors import InvalidRecordError
from slidingpolicy.routing import AHEAD_POINTS, ReplicaReport
from slidingpolicy.routing.replica_report import merge_points
from tests.routing.strategies import reports

GOOD = {
    "made_at": 1.0,
    "free_at": 1.1,
    "queued": 2,
    "queued_tokens": 900,
    "decoding": 3,
    "tightest_slack": 0.05,
    "prefill_rate": 5000.0,
    "ahead": ((2.0, 300), (4.0, 800)),
}


@given(report=reports())
def test_a_report_travels_as_json_and_back(report: ReplicaReport) -> None:
    assert ReplicaReport.from_dict(json.loads(json.dumps(report.to_dict()))) == report


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("free_at", 0.5, "free_at=0.5 is before made_at=1.0"),
        ("queued", -1, "queued=-1 must be >= 0"),
        ("prefill_rate", math.inf, "prefill_rate=inf must be finite"),
        ("tightest_slack", math.nan, "tightest_slack must be a number"),
        ("ahead", ((4.0, 300), (2.0, 800)), "must list deadlines and cumulative tokens"),
        ("ahead", ((2.0, 300), (4.0, 1800)), "counts 1800 tokens, more than queued_tokens=900"),
        ("ahead", ((2.0, 0),), "ahead=0 must be >= 1"),
        ("ahead", "many", "must be a tuple of pairs"),
        ("met", -1, "met=-1 must be >= 0"),
        ("met", 2.5, "met"),
    ],
)
def test_a_bad_report_is_refused_naming_its_field(field: str, value: object, message: str) -> None:
    with pytest.raises(InvalidRecordError, match="replica report: ") as raised:
        ReplicaReport(**{**GOOD, field: value})  # type: ignore[arg-type]
    assert message in str(raised.value)


def test_a_report_read_from_json_needs_every_field() -> None:
    data = ReplicaReport(**GOOD).to_dict()  # type: ignore[arg-type]
    del data["decoding"]
    with pytest.raises(InvalidRecordError, match="replica report: decoding is missing"):
        ReplicaReport.from_dict(data)


@given(
    sizes=st.lists(st.integers(1, 3000), max_size=200),
    gaps=st.lists(st.floats(0.0, 3.0), min_size=200, max_size=200),
    deadline=st.floats(0.0, 700.0),
)
def test_merged_points_never_count_less_than_the_queue(
    sizes: list[int], gaps: list[float], deadline: float
) -> None:
    points, at, total = [], 0.0, 0
    for size, gap in zip(sizes, gaps, strict=False):
        at += gap
        total += size
        points.append((at, total))
    merged = merge_points(points)
    assert len(merged) <= AHEAD_POINTS
    exact = max((tokens for d, tokens in points if d <= deadline), default=0)
    report = ReplicaReport(0.0, 0.0, len(points), total, 0, math.inf, 1.0, merged)
    assert report.tokens_ahead(deadline) >= exact
    if len(points) <= AHEAD_POINTS:
        assert report.tokens_ahead(deadline) == exact


@given(report=reports(), tokens=st.integers(1, 8000), later=st.floats(0.0, 30.0))
def test_a_first_token_comes_no_sooner_for_more_work_or_later_routing(
    report: ReplicaReport, tokens: int, later: float
) -> None:
    now, deadline = report.made_at, report.made_at + 3.0
    first = report.first_token(tokens, deadline, now)
    assert report.first_token(tokens + 1, deadline, now) >= first
    assert report.first_token(tokens, deadline, now, sent=[(now, 500)]) >= first
    assert report.first_token(tokens, deadline, now + later) >= first
    assert first >= now or math.isinf(first)
    assert math.isinf(first) == (report.prefill_rate == 0.0)


def test_a_request_sent_to_an_idle_replica_is_not_served_before_it_was_sent() -> None:
    """A replica idle since its report (10 s ago) is sent 5,000 prompt tokens now: they wait
    5 s at 1,000 tokens/s, however long it idled before (its idle time is not theirs)."""
    report = ReplicaReport(0.0, 0.0, 0, 0, 0, math.inf, 1000.0)
    assert report.first_token(100, 30.0, 10.0, sent=[(10.0, 5000)]) == pytest.approx(15.1)
    assert report.first_token(100, 30.0, 10.0, sent=[(0.0, 5000)]) == pytest.approx(10.1)


@given(
    report=reports(),
    gaps=st.lists(st.floats(0.0, 5.0), max_size=8),
    sizes=st.lists(st.integers(1, 4000), min_size=8, max_size=8),
    delay=st.floats(0.0, 5.0),
)
def test_work_sent_since_a_report_drains_only_from_when_it_was_sent(
    report: ReplicaReport, gaps: list[float], sizes: list[int], delay: float
) -> None:
    """The first token behind requests sent since the report: no sooner than if they had
    all been there when the replica became free (the bound that credits them its idle time),
    equal to it when they were, and no sooner when each is sent later."""
    deadline, times, at = report.made_at + 3.0, [], report.made_at
    for gap in gaps:
        at += gap
        times.append(at)
    sent = list(zip(times, sizes, strict=False))
    now = at + delay
    first = report.first_token(50, deadline, now, sent)
    total = sum(tokens for _, tokens in sent)
    if math.isinf(first):
        assert report.prefill_rate == 0.0
        return
    rate = report.prefill_rate
    credited = max(now, report.free_at + (report.tokens_ahead(deadline) + total) / rate) + 50 / rate
    assert first >= credited * (1 - 1e-12)
    at_free = [(min(t, report.free_at), tokens) for t, tokens in sent]
    assert report.first_token(50, deadline, now, at_free) == pytest.approx(credited)
    later = [(t + delay, tokens) for t, tokens in sent]
    assert report.first_token(50, deadline, now + delay, later) >= first * (1 - 1e-12)
