"""Burst shedding (`SlidingConfig.shed_bursts`): the requests given up are the fewest that
leave every other live request able to finish its prefill by its TTFT deadline at ρ_t, in
deadline order (checked against every subset on small queues), never a protected one, and
they sort after every live request of their protection class."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from slidingpolicy import Request, SchedulerState, SlidingConfig, sort_candidates
from slidingpolicy.records.candidates import deadline_key
from slidingpolicy.stages.order import burst_shed
from slidingpolicy.testing.strategies import NOW, prefill_queues

throughputs = st.floats(100.0, 50_000.0)


def feasible(kept: Sequence[Request], throughput: float) -> bool:
    """Every kept live request's prefill, after those due before it, done by its deadline."""
    work = 0
    for request in sorted(kept, key=deadline_key):
        work += request.remaining_prefill
        if work > throughput * (request.deadline - NOW):
            return False
    return True


def fewest_to_drop(live: list[Request], throughput: float) -> int:
    """The least number of unprotected live requests whose removal leaves the rest feasible,
    by trying every subset (the protected ones alone must be feasible)."""
    droppable = [r for r in live if not r.protected]
    for size in range(len(droppable) + 1):
        for dropped in itertools.combinations(droppable, size):
            if feasible([r for r in live if r not in dropped], throughput):
                return size
    raise AssertionError("the protected requests alone are not feasible")


@given(prefill_queues(max_size=8), throughputs)
@settings(max_examples=300)
def test_the_shed_requests_are_the_fewest_that_leave_the_rest_on_time(
    queue: list[Request], throughput: float
) -> None:
    shed = burst_shed(queue, NOW, throughput)
    live = [r for r in queue if r.deadline > NOW]
    assert shed <= {r.id for r in live if not r.protected}
    if feasible([r for r in live if r.protected], throughput):
        assert feasible([r for r in live if r.id not in shed], throughput)
        assert len(shed) == fewest_to_drop(live, throughput)


@given(prefill_queues(max_size=16), throughputs)
@settings(max_examples=200)
def test_shed_requests_sort_after_every_live_one_of_their_class(
    queue: list[Request], throughput: float
) -> None:
    config = SlidingConfig(shed_bursts=True)
    ordered = sort_candidates(SchedulerState(NOW, tuple(queue), throughput), config)
    shed = burst_shed(queue, NOW, throughput)
    for protected in (True, False):
        marks = [r.id in shed for r in ordered if r.protected == protected and r.deadline > NOW]
        assert marks == sorted(marks)


def test_a_burst_gives_up_its_largest_prompt() -> None:
    """At 1000 tokens/s, 2,400 tokens due in 2.5 s and 500 + 600 due in 3 s cannot all be
    done; giving up the 2,400-token prompt, due first, saves the other two."""
    requests = (
        Request("large", NOW - 0.5, 2400, 0, 0, 3.0, 0.1),
        Request("small", NOW, 500, 0, 0, 3.0, 0.1),
        Request("medium", NOW, 600, 0, 0, 3.0, 0.1),
    )
    assert burst_shed(requests, NOW, 1000.0) == {"large"}
    assert burst_shed(requests, NOW, 1200.0) == frozenset()
    state = SchedulerState(NOW, requests, 1000.0)
    by_deadline = SlidingConfig(level_order="deadline")
    shedding = SlidingConfig(level_order="deadline", shed_bursts=True)
    assert [r.id for r in sort_candidates(state, by_deadline)] == ["large", "small", "medium"]
    assert [r.id for r in sort_candidates(state, shedding)] == ["small", "medium", "large"]
