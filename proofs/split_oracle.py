"""Oracle for the window split of eq. 9: an exhaustive scan of b over the allowed range."""

from __future__ import annotations

import attrs

from slidingpolicy.pricing.queue import PricedQueue
from slidingpolicy.pricing.split import COST_TIE, two_step_cost

TOLERANCE = 1e-12
"""Seconds: the split prices candidates by closed forms, the scan by PricedQueue.price."""


@attrs.frozen(slots=True)
class Split:
    """The scan's answer: b, its cost, and whether b lies in [max(0, B_Σ − cap), min(B_Σ, cap)]
    (False: nothing in range met the deadline, b is the largest feasible b below it)."""

    b: int
    cost: float
    in_range: bool


def split_range(budget_sum: int, cap: int) -> range:
    """[max(0, B_Σ − cap), min(B_Σ, cap)]: both iterations within the cap."""
    return range(max(0, budget_sum - cap), min(budget_sum, cap) + 1)


def feasible(priced: PricedQueue, b: int, deadline: float, tolerance: float = 0.0) -> bool:
    """b = 0 always; otherwise T̂₁(b) ≤ deadline."""
    return b == 0 or priced.price(0, b) <= deadline + tolerance


def scan_split(priced: PricedQueue, budget_sum: int, cap: int, deadline: float) -> Split:
    """The feasible b in range minimizing two_step_cost (costs within `split.COST_TIE` of the
    least are ties, to the larger b), or else the largest feasible b below the range."""
    costs = {
        b: two_step_cost(priced, b, budget_sum)
        for b in split_range(budget_sum, cap)
        if feasible(priced, b, deadline)
    }
    if costs:
        least = min(costs.values())
        b = max(b for b, cost in costs.items() if cost <= least + COST_TIE * abs(least))
        return Split(b, costs[b], True)
    start = max(0, budget_sum - cap)
    b = next(b for b in range(start, -1, -1) if feasible(priced, b, deadline))
    return Split(b, two_step_cost(priced, b, budget_sum), False)


def judge_split(
    priced: PricedQueue, found: int, budget_sum: int, cap: int, deadline: float
) -> str | None:
    """None when `found` is as good as the scan's answer, else what differs."""
    oracle = scan_split(priced, budget_sum, cap, deadline)
    if not oracle.in_range:
        return None if found == oracle.b else f"fallback b={found}, scan says {oracle.b}"
    if found not in split_range(budget_sum, cap):
        return f"b={found} outside the range, scan found b={oracle.b} in it"
    if not feasible(priced, found, deadline, TOLERANCE):
        return f"b={found} misses the deadline: T̂₁={priced.price(0, found)!r} > {deadline!r}"
    cost = two_step_cost(priced, found, budget_sum)
    if cost > oracle.cost + TOLERANCE:
        return f"b={found} costs {cost!r}, scan's b={oracle.b} costs {oracle.cost!r}"
    return None
