"""The head of the queue read off a `CandidateQueue`'s indexes is the head of the sorted
queue, element for element: for MLPS in every configuration, EDF, FCFS and Sarathi's order,
under a KV `prompt_limit`, and after the queue has been updated and time has moved on (issue
"bounded cost under overload")."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slidingpolicy import Request, SchedulerState, SlidingConfig
from slidingpolicy.errors import InvalidRecordError
from slidingpolicy.policies.sarathi import IN_PROGRESS_FIRST
from slidingpolicy.pricing.queue import head
from slidingpolicy.records import tree
from slidingpolicy.records.candidates import CandidateQueue
from slidingpolicy.stages import order
from slidingpolicy.stages.order import EDF, FCFS, QueueOrder, mlps_head, order_candidates
from slidingpolicy.testing.strategies import NOW, configs, decoding_requests, prefill_queues


@contextmanager
def indexed() -> Iterator[None]:
    """Every queue read off its index (never sorted), in nodes of at most 4 entries."""
    with (
        mock.patch.object(order, "SORT_LIMIT", -1),
        mock.patch.multiple(tree, FANOUT=4, _LOW=1, _FILL=3),
    ):
        yield


throughputs = st.floats(100.0, 50_000.0)
fits = st.one_of(st.none(), st.integers(0, 4096))
reaches = st.one_of(st.integers(0, 5000), st.just(10**9))
times = st.floats(-1.0, 1.0)


def ids(requests: list[Request]) -> list[str]:
    return [r.id for r in requests]


def sorted_head(state: SchedulerState, config: SlidingConfig, reach: int) -> list[Request]:
    if config.order == "edf":
        return head(sorted(state.prefill_candidates, key=EDF.key), reach)
    queue = order_candidates(state.prefill_candidates, state.now, state.prefill_throughput, config)
    return head(queue, reach)


@pytest.mark.slow
@given(prefill_queues(), configs(), throughputs, fits, reaches)
@settings(max_examples=300)
def test_the_indexed_mlps_head_is_the_sorted_one(
    requests: list[Request], config: SlidingConfig, rho: float, limit: int | None, reach: int
) -> None:
    state = SchedulerState.of(NOW, (), CandidateQueue.of(requests, limit), rho)
    expected = sorted_head(state, config, reach)
    with indexed():
        assert ids(mlps_head(state, config, reach)) == ids(expected)


@pytest.mark.slow
@given(
    prefill_queues(),
    prefill_queues("n"),
    st.data(),
    configs(),
    throughputs,
    fits,
    reaches,
    st.lists(times, min_size=1, max_size=4),
)
@settings(max_examples=200)
def test_the_index_stays_exact_as_the_queue_changes_and_time_moves(
    requests: list[Request],
    newcomers: list[Request],
    data: st.DataObject,
    config: SlidingConfig,
    rho: float,
    limit: int | None,
    reach: int,
    steps: list[float],
) -> None:
    with indexed():
        queue = CandidateQueue.of(requests, limit)
        now = NOW
        for step in steps:
            now = now + step
            leaving = [r.id for r in requests if data.draw(st.booleans())]
            joining = [r for r in newcomers if data.draw(st.booleans())]
            newcomers = [r for r in newcomers if r not in joining]
            requests = [r for r in requests if r.id not in leaving] + joining
            queue = queue.update(remove=leaving, add=joining).with_prompt_limit(limit)
            state = SchedulerState.of(max(now, queue.latest_arrival), (), queue, rho)
            mlps_head(state, config, reach)
            reference = SchedulerState(state.now, tuple(requests), rho)
            listed = [r for r in reference.prefill_candidates if queue.shows(r)]
            expected = sorted_head(SchedulerState(state.now, tuple(listed), rho), config, reach)
            assert ids(mlps_head(state, config, reach)) == ids(expected)


@pytest.mark.slow
@given(prefill_queues(), st.sampled_from([FCFS, EDF, IN_PROGRESS_FIRST]), fits, reaches)
@settings(max_examples=200)
def test_a_fixed_order_read_off_its_index_is_the_sorted_one(
    requests: list[Request], fixed: QueueOrder, limit: int | None, reach: int
) -> None:
    state = SchedulerState.of(NOW, (), CandidateQueue.of(requests, limit), 8000.0)
    expected = head(sorted(state.prefill_candidates, key=fixed.key), reach)
    with indexed():
        assert ids(order.ordered_head(state, fixed, reach)) == ids(expected)


@given(st.lists(decoding_requests("d"), max_size=1), prefill_queues(), fits)
def test_a_queued_state_holds_what_a_listed_one_does(
    decodes: list[Request], requests: list[Request], limit: int | None
) -> None:
    queue = CandidateQueue.of(requests, limit)
    state = SchedulerState.of(NOW, tuple(decodes), queue, 8000.0, 100)
    shown = [r for r in requests if limit is None or r.prefilled > 0 or r.prompt_tokens <= limit]
    assert ids(list(state.prefill_candidates)) == sorted(ids(shown))
    assert ids(list(state.requests)) == ids(decodes) + sorted(ids(shown))
    assert state == SchedulerState(NOW, state.requests, 8000.0, 100)
    for r in [*decodes, *requests]:
        assert state.request(r.id) == (r if r in decodes or r in shown else None)


def waiting(rid: str, arrival: float = 1.0) -> Request:
    return Request(rid, arrival, 100, 0, 0, 3.0, 0.1)


def test_a_bad_update_names_the_queue_and_field_and_changes_nothing() -> None:
    queue = CandidateQueue.of([waiting("a")])
    decoding = Request("d", 1.0, 10, 10, 1, 3.0, 0.1)
    for remove, add, message in [
        (["b"], [], "'b', not a member"),
        ([], [waiting("a")], "id 'a' twice"),
        ([], [decoding], "'d', which is decoding"),
        ([], ["a"], "non-Request"),
        (["a", "a"], [], "'a', not a member"),
        ([], [waiting("n"), waiting("n")], "id 'n' twice"),
    ]:
        with pytest.raises(InvalidRecordError, match=message) as error:
            queue.update(remove=remove, add=add)  # type: ignore[arg-type]
        assert "candidate queue" in str(error.value)
    assert ids(list(queue.shown())) == ["a"]
    replaced = queue.update(remove=["a"], add=[waiting("a", arrival=2.0)])
    assert [r.arrival for r in replaced.shown()] == [2.0]
    with pytest.raises(InvalidRecordError, match="prompt_limit"):
        CandidateQueue(prompt_limit=-1)


def test_a_queued_state_checks_its_decodes_and_the_queue_s_arrivals() -> None:
    queue = CandidateQueue.of([waiting("a", arrival=5.0)])
    decoding = Request("d", 1.0, 10, 10, 1, 3.0, 0.1)
    with pytest.raises(InvalidRecordError, match=re.escape("arriving at 5.0, after now=4.0")):
        SchedulerState.of(4.0, (), queue, 8000.0)
    with pytest.raises(InvalidRecordError, match="'a', not decoding"):
        SchedulerState.of(6.0, (waiting("a"),), CandidateQueue(), 8000.0)
    with pytest.raises(InvalidRecordError, match="id 'a' twice"):
        SchedulerState.of(6.0, (Request("a", 1.0, 10, 10, 1, 3.0, 0.1),), queue, 8000.0)
    with pytest.raises(InvalidRecordError, match="prefill_throughput"):
        SchedulerState.of(6.0, (decoding,), queue, 0.0)
    with pytest.raises(InvalidRecordError, match="queue"):
        SchedulerState.of(6.0, (decoding,), [waiting("a")], 8000.0)  # type: ignore[arg-type]
