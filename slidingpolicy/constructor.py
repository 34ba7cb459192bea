"""BatchConstructor (§4.4, eq. 17–22, Alg. 3): choose whole prefills that meet an anchor's slack."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from slidingpolicy.budget import fill_budget
from slidingpolicy.fill import Fill
from slidingpolicy.knapsack import knapsack, max_count
from slidingpolicy.request import Request


@attrs.frozen(slots=True)
class Construction:
    """The chosen batch: the anchor and every prefill that finishes with it (Y_a of eq. 21)."""

    anchor: Request
    chosen: tuple[Request, ...]
    latency: float
    limit: float
    repaired: bool
    value: float
    position: int

    @property
    def rank(self) -> tuple[int, float, int, int]:
        """(|Y_a|, Σ v over Y*, Σ r over Y_a) — the lexicographic order of eq. 21 — and then
        the earlier anchor in queue order."""
        work = sum(r.remaining_prefill for r in self.chosen)
        return (len(self.chosen), self.value, work, -self.position)


def values(items: Sequence[Request], now: float) -> list[float]:
    """v_j = 1 / (s_j / Σ_k s_k + r_j / Σ_k r_k) over S_a (eq. 18); zero sums count as 1."""
    slacks = [r.deadline - now for r in items]
    total_slack = sum(slacks) or 1.0
    total_work = sum(r.remaining_prefill for r in items) or 1
    return [
        1.0 / (s / total_slack + r.remaining_prefill / total_work)
        for s, r in zip(slacks, items, strict=True)
    ]


def _pool(anchor: Request, members: Sequence[Request], now: float) -> list[Request]:
    """S_a: the live members other than a whose slack is at least a's, in queue order."""
    slack = anchor.deadline - now
    return [
        m for m in members if m.id != anchor.id and m.deadline - now >= slack and m.deadline > now
    ]


def build_for_anchor(
    base: Fill,
    anchor: Request,
    members: Sequence[Request],
    now: float,
    limit: float,
    cap: int,
    position: int = 0,
    beat: int = 0,
) -> Construction | None:
    """Y_a for one anchor, verified against its limit T_a; None when the anchor cannot fit.

    `base` prices the decodes that run with the batch (its queue is not used).

    S_a are the live members (other than a) with s_j ≥ s_a, in queue order; C_a is the
    prefill budget of T_a with a first (eq. 17); the knapsack fills C_a − r_a (eq. 19–20);
    then the lowest-value items are dropped until T̂ ≤ T_a (verify-and-repair). An anchor
    whose batch alone (decodes and a) misses T_a is skipped at once: repair could only end
    there. So is one whose largest possible |Y_a| is below `beat`, the size of the best Y
    found so far: eq. 21 ranks size first.
    """
    pool = _pool(anchor, members, now)
    fill = base.requeue([anchor, *pool])
    if fill.price_whole([0]) > limit:
        return None
    capacity = fill_budget(fill, limit, cap)
    if anchor.remaining_prefill > capacity:
        return None
    weights = [m.remaining_prefill for m in pool]
    if 1 + max_count(weights, capacity - anchor.remaining_prefill) < beat:
        return None
    worth = values(pool, now)
    picked = knapsack(weights, worth, capacity - anchor.remaining_prefill)
    kept = sorted(picked, key=lambda i: (worth[i], -i))
    repaired = False
    latency = fill.price_whole([0, *(i + 1 for i in kept)])
    while latency > limit and kept:
        kept.pop(0)
        repaired = True
        latency = fill.price_whole([0, *(i + 1 for i in kept)])
    if latency > limit:
        return None
    order = sorted(kept)
    return Construction(
        anchor=anchor,
        chosen=(anchor, *(pool[i] for i in order)),
        latency=latency,
        limit=limit,
        repaired=repaired,
        value=sum(worth[i] for i in order),
        position=position,
    )


def construct_batch(
    base: Fill,
    members: Sequence[Request],
    risky: Sequence[Request],
    now: float,
    t_cur: float | None,
    cap: int,
) -> Construction | None:
    """The best verified Y_a over every risky anchor by eq. 21, or None if no anchor fits.

    T_a = min(s_a, T_cur), with T_cur only when D_safe is non-empty. Anchors with larger
    S_a go first, so that the size bound |Y_a| ≤ 1 + |S_a| skips most of the rest; exact
    ties in eq. 21 go to the anchor earlier in queue order.
    """
    best: Construction | None = None
    order = sorted(range(len(risky)), key=lambda i: (risky[i].deadline, i))
    for position in order:
        anchor = risky[position]
        beat = 0 if best is None else len(best.chosen)
        if 1 + len(_pool(anchor, members, now)) < beat:
            continue
        slack = anchor.deadline - now
        limit = slack if t_cur is None else min(slack, t_cur)
        built = build_for_anchor(base, anchor, members, now, limit, cap, position, beat)
        if built is not None and (best is None or built.rank > best.rank):
            best = built
    return best
