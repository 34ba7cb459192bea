"""Hypothesis strategies of the routing tests: reports, sets of them, ledgers, new requests."""

from __future__ import annotations

import math

from hypothesis import strategies as st

from slidingpolicy.records.request import Request
from slidingpolicy.routing import AHEAD_POINTS, Ledger, ReplicaReport, Sent

NOW = 100.0


@st.composite
def reports(draw: st.DrawFn, now: float = NOW) -> ReplicaReport:
    """A report made up to 20 s before `now`, with up to `AHEAD_POINTS` live points."""
    made = now - draw(st.floats(0.0, 20.0))
    free = made + draw(st.floats(0.0, 0.5))
    gaps = draw(st.lists(st.floats(0.0, 5.0), max_size=AHEAD_POINTS))
    sizes = draw(st.lists(st.integers(1, 4000), min_size=len(gaps), max_size=len(gaps)))
    ahead, deadline, total = [], made, 0
    for gap, size in zip(gaps, sizes, strict=True):
        deadline += gap
        total += size
        ahead.append((deadline, total))
    late = draw(st.integers(0, 5000))
    return ReplicaReport(
        made_at=made,
        free_at=free,
        queued=len(ahead) + draw(st.integers(0, 3)),
        queued_tokens=total + late,
        decoding=draw(st.integers(0, 64)),
        tightest_slack=draw(st.one_of(st.just(math.inf), st.floats(-2.0, 2.0))),
        prefill_rate=draw(st.one_of(st.just(0.0), st.floats(100.0, 20000.0))),
        ahead=tuple(ahead),
        keeps_pace=draw(st.booleans()),
        met=draw(st.one_of(st.none(), st.integers(0, 10**6))),
    )


@st.composite
def report_sets(draw: st.DrawFn, min_size: int = 1) -> dict[str, ReplicaReport]:
    """Reports of 1 to 8 replicas named r0, r1, ..."""
    count = draw(st.integers(min_size, 8))
    return {f"r{k}": draw(reports()) for k in range(count)}


@st.composite
def new_requests(draw: st.DrawFn, now: float = NOW) -> Request:
    """A request arriving at `now`."""
    return Request(
        "new",
        now,
        draw(st.integers(1, 8000)),
        0,
        0,
        draw(st.sampled_from([0.5, 3.0, 10.0, 30.0])),
        draw(st.sampled_from([0.05, 0.1, 0.2])),
    )


@st.composite
def ledgers(draw: st.DrawFn, replicas: list[str], now: float = NOW) -> Ledger:
    """What a router sent to `replicas` in the last 20 s, and its seed and decisions."""
    sent = draw(
        st.lists(
            st.builds(
                Sent,
                st.sampled_from(replicas),
                st.floats(now - 20.0, now),
                st.integers(1, 4000),
                st.floats(now, now + 30.0),
            ),
            max_size=10,
        )
    )
    last = draw(st.one_of(st.none(), st.sampled_from(replicas)))
    return Ledger(draw(st.integers(0, 2**32)), tuple(sent), last, draw(st.integers(0, 10**6)))
