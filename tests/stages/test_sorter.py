"""MLPS (eq. 10–16): the queue is sorted by its key; urgency, protection and lateness."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings

from slidingpolicy import Request, SchedulerState, SlidingConfig, sort_candidates
from slidingpolicy.records.candidates import deadline_key
from slidingpolicy.stages.order import burst_shed, is_urgent, mlps_keys
from slidingpolicy.testing.strategies import NOW, configs, states


@pytest.mark.slow
@given(states(), configs())
@settings(max_examples=200)
def test_mlps_output_is_sorted_by_its_key(state: SchedulerState, config: SlidingConfig) -> None:
    queue = sort_candidates(state, config)
    assert Counter(r.id for r in queue) == Counter(r.id for r in state.prefill_candidates)
    keys: list[Any]
    if config.order == "edf":
        keys = [deadline_key(r) for r in queue]
    else:
        now, throughput = state.now, state.prefill_throughput
        shed = burst_shed(queue, now, throughput) if config.shed_bursts else frozenset()
        key = mlps_keys(now, throughput, config, shed)
        keys = [key(r) for r in queue]
    assert keys == sorted(keys)


def waiting(rid: str, prompt: int, slack: float, protected: bool = False) -> Request:
    return Request(rid, NOW + slack - 3.0, prompt, 0, 0, 3.0, 0.1, protected=protected)


def urgent(request: Request) -> bool:
    return is_urgent(request.remaining_prefill, request.deadline, NOW, 5000.0, 1.0, 1e-3)


def test_urgency_is_eq_13_against_alpha() -> None:
    # u = r / (ρ · max(s, ε)): 625 / (5000 · 0.125) = 1.0 is not > α = 1; 626 tokens is.
    assert not urgent(waiting("a", 625, 0.125))
    assert urgent(waiting("b", 626, 0.125))
    # A passed deadline counts as ε: urgent once r > α·ρ·ε = 5 tokens.
    assert not urgent(waiting("c", 5, -5.0))
    assert urgent(waiting("d", 6, -5.0))


def test_protection_then_urgency_then_work() -> None:
    requests = (
        waiting("big-calm", 900, 2.5),
        waiting("small-calm", 100, 2.5),
        waiting("urgent", 4000, 0.5),
        waiting("protected", 3000, 2.5, protected=True),
    )
    state = SchedulerState(NOW, requests, 5000.0)
    assert [r.id for r in sort_candidates(state)] == [
        "protected",
        "urgent",
        "small-calm",
        "big-calm",
    ]


def test_the_recommended_order_puts_hopeless_requests_after_the_calm_ones() -> None:
    """`slidingserve+`: deadline inside each level, urgent (e_i = 1) after the others."""
    requests = (
        waiting("big-early", 2000, 1.0),
        waiting("small-late", 100, 2.5),
        waiting("hopeless", 4000, 0.5),
        waiting("protected", 3000, 2.5, protected=True),
    )
    state = SchedulerState(NOW, requests, 5000.0)
    config = SlidingConfig(level_order="deadline", urgent_first=False)
    assert [r.id for r in sort_candidates(state, config)] == [
        "protected",
        "big-early",
        "small-late",
        "hopeless",
    ]


def test_late_requests_go_last_unless_demotion_is_off() -> None:
    requests = (waiting("late", 10, -0.5), waiting("live", 2000, 2.0))
    state = SchedulerState(NOW, requests, 5000.0)
    assert [r.id for r in sort_candidates(state)] == ["live", "late"]
    keep = SlidingConfig(demote_late=False)
    assert [r.id for r in sort_candidates(state, keep)] == ["late", "live"]


def test_ties_break_by_arrival_then_id() -> None:
    requests = (waiting("b", 100, 2.0), waiting("a", 100, 2.0), waiting("c", 100, 1.9))
    state = SchedulerState(NOW, requests, 5000.0)
    assert [r.id for r in sort_candidates(state)] == ["c", "a", "b"]
