"""check_plan: each invariant, broken on purpose, is reported with its number."""

from __future__ import annotations

import pytest

from slidingpolicy import (
    Allocation,
    BatchPlan,
    Diagnostics,
    LatencyPredictor,
    LinearModel,
    Request,
    SchedulerState,
    Violation,
    check_plan,
)

NOW = 10.0
D1 = Request("d1", 5.0, 100, 100, 20, 3.0, 0.1)  # deadline 5 + 3 + 2.0 = 10.0 (passed)
D2 = Request("d2", 6.0, 100, 100, 10, 3.0, 0.1)  # deadline 6 + 3 + 1.0 = 10.0 (due now)
P1 = Request("p1", 9.0, 400, 100, 0, 3.0, 0.1)  # r = 300, TTFT slack 2.0 s
P2 = Request("p2", 9.5, 50, 0, 0, 0.55, 0.1)  # r = 50, TTFT slack 0.05 s
D3 = Request("d3", 9.0, 10, 10, 1, 1.0, 0.1)  # deadline 9 + 1 + 0.1 = 10.1: slack 0.1 s
STATE = SchedulerState(NOW, (D1, D2, D3, P1, P2), 8000.0, kv_free_tokens=400)
FLAT = LinearModel(0.0, (0.0, 0.0, 0.0, 0.0, 0.0, 1e-3, 0.0))
PREDICTOR = LatencyPredictor(FLAT, FLAT, FLAT, fallback=FLAT)


def plan(
    tokens: dict[str, int], branch: str = "chunker", latency: float = 0.0, **extra: object
) -> BatchPlan:
    allocations = tuple(Allocation(i, n) for i, n in tokens.items())
    prefill = sum(n for i, n in tokens.items() if i.startswith("p"))
    return BatchPlan(allocations, branch, "test", prefill, latency, **extra)  # type: ignore[arg-type]


def numbers(found: list[Violation]) -> list[int]:
    return sorted({v.invariant for v in found})


DECODES = {"d1": 1, "d2": 1, "d3": 1}


def test_a_good_plan_breaks_nothing() -> None:
    good = plan({**DECODES, "p1": 20}, latency=0.02)
    assert check_plan(STATE, good, token_budget=512, predictor=PREDICTOR) == []


@pytest.mark.parametrize(
    ("tokens", "invariant"),
    [
        ({**DECODES, "ghost": 3}, 1),
        ({**DECODES, "d3": 2}, 2),
        ({**DECODES, "p1": 301}, 2),
        ({"d1": 1, "d2": 1}, 3),
        ({**DECODES, "p1": 300, "p2": 50, "d9": 1}, 1),
    ],
)
def test_allocation_invariants(tokens: dict[str, int], invariant: int) -> None:
    assert invariant in numbers(check_plan(STATE, plan(tokens)))


def test_duplicate_ids_break_invariant_1() -> None:
    twice = BatchPlan((Allocation("d1", 1), Allocation("d1", 1)), "chunker", "slidingserve", 0, 0.0)
    assert 1 in numbers(check_plan(STATE, twice))


def test_left_out_decodes_must_be_listed_and_needed() -> None:
    listed = plan({"d1": 1, "d2": 1}, deferred=("d3",))
    assert numbers(check_plan(STATE, listed)) == [3]  # listed, but there was room for it
    tight = SchedulerState(NOW, STATE.requests, 8000.0, kv_free_tokens=2)
    assert check_plan(tight, plan({"d1": 1, "d2": 1}, preempted=("d3",))) == []
    assert numbers(check_plan(STATE, plan(DECODES, preempted=("p1",)))) == [3]


def test_token_budget_is_invariant_4_and_kv_is_invariant_5() -> None:
    big = plan({**DECODES, "p1": 300, "p2": 50})
    assert numbers(check_plan(STATE, big, token_budget=64)) == [4]
    small_kv = SchedulerState(NOW, STATE.requests, 8000.0, kv_free_tokens=100)
    assert numbers(check_plan(small_kv, big)) == [5]


def test_constructor_plan_must_finish_each_prefill_and_meet_the_anchor() -> None:
    anchor = Diagnostics(anchor="p2")
    whole = plan({**DECODES, "p2": 50}, "constructor", 0.04, diagnostics=anchor)
    assert check_plan(STATE, whole) == []
    partial = plan({**DECODES, "p2": 20}, "constructor", 0.02, diagnostics=anchor)
    assert numbers(check_plan(STATE, partial)) == [6]
    late = plan({**DECODES, "p2": 50}, "constructor", 0.06, diagnostics=anchor)
    assert numbers(check_plan(STATE, late)) == [6]
    # With the predictor, the latency is recomputed: 50 tokens · 1 ms = 0.05 s ≤ 0.05 s.
    assert check_plan(STATE, late, predictor=PREDICTOR) == []
    missing = plan({**DECODES, "p2": 50}, "constructor", 0.04, diagnostics=Diagnostics())
    assert numbers(check_plan(STATE, missing)) == [6]


def test_chunker_plan_must_meet_t_cur() -> None:
    # D_safe = {d3} (d1 and d2 are past their deadline): T_cur = 0.1 s.
    assert check_plan(STATE, plan({**DECODES, "p1": 90}), predictor=PREDICTOR) == []
    over = plan({**DECODES, "p1": 120})
    assert numbers(check_plan(STATE, over, predictor=PREDICTOR)) == [7]
    assert check_plan(STATE, plan(DECODES, latency=5.0)) == []  # no prefill, nothing to meet


def test_violations_read_as_sentences() -> None:
    found = check_plan(STATE, plan({**DECODES, "d3": 1, "ghost": 1}))
    assert "invariant 1: request 'ghost' is not in the state" in [str(v) for v in found]


def test_the_margin_in_force_is_the_plans_own() -> None:
    """T_cur = 0.1 s. 60 ms of prefill priced with a margin of 1.5 (90 ms) is valid, and is
    not flagged by default; held to a margin of 2 (120 ms) it is. 80 ms priced with 1.5
    (120 ms) breaks invariant 7, though T̂ alone (80 ms) would meet T_cur."""
    priced = Diagnostics(margin=1.5)
    valid = plan({**DECODES, "p1": 60}, diagnostics=priced)
    assert check_plan(STATE, valid, predictor=PREDICTOR) == []
    assert numbers(check_plan(STATE, valid, predictor=PREDICTOR, margin=2.0)) == [7]
    over = plan({**DECODES, "p1": 80}, diagnostics=priced)
    assert numbers(check_plan(STATE, over, predictor=PREDICTOR)) == [7]
    assert check_plan(STATE, over, predictor=PREDICTOR, margin=1.0) == []
    assert "× margin 1.5 exceeds T_cur=0.1s" in str(check_plan(STATE, over, predictor=PREDICTOR)[0])


def test_the_constructor_is_held_to_its_plans_margin() -> None:
    """p2's TTFT slack is 0.05 s: 40 ms priced with a margin of 1.2 (48 ms) fits, with 1.5
    (60 ms) it does not."""
    fits = Diagnostics(anchor="p2", margin=1.2)
    assert (
        check_plan(STATE, plan({**DECODES, "p2": 50}, "constructor", 0.04, diagnostics=fits)) == []
    )
    late = Diagnostics(anchor="p2", margin=1.5)
    broken = check_plan(STATE, plan({**DECODES, "p2": 50}, "constructor", 0.04, diagnostics=late))
    assert numbers(broken) == [6]
