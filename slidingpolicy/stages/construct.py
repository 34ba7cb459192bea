"""BatchConstructor (eq. 17–22, Alg. 3): choose whole prefills that meet an anchor's slack."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from slidingpolicy import _arguments, _validate
from slidingpolicy.pricing.budget import fill_budget
from slidingpolicy.pricing.queue import PricedQueue
from slidingpolicy.records.plan import BatchPlan, Diagnostics, PlanBranch
from slidingpolicy.records.request import Request
from slidingpolicy.stages.assemble import assemble
from slidingpolicy.stages.draft import Draft
from slidingpolicy.stages.knapsack import knapsack, max_count
from slidingpolicy.stages.order import promotion_line
from slidingpolicy.stages.violation_check import CandidateBatch, check_violations


@attrs.frozen(slots=True)
class Construction:
    """The chosen batch: the anchor and every prefill that finishes with it (Y_a of eq. 21);
    `worth` holds v_j of each item of S_a, in the pool's order (eq. 18)."""

    anchor: Request
    chosen: tuple[Request, ...]
    latency: float
    limit: float
    repaired: bool
    value: float
    position: int
    worth: tuple[float, ...] = ()

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
    slack = anchor.slack(now)
    return [
        m for m in members if m.id != anchor.id and m.deadline - now >= slack and m.deadline > now
    ]


@attrs.frozen(slots=True)
class Anchor:
    """A risky request that passed the skip rules, with its T_a, C_a, S_a and the largest
    |Y_a| any subset of S_a could give (1 + the most items of S_a that fit C_a − r_a)."""

    request: Request
    position: int
    limit: float
    capacity: int
    pool: tuple[Request, ...]
    bound: int


def admit_anchor(
    base: PricedQueue,
    anchor: Request,
    members: Sequence[Request],
    now: float,
    limit: float,
    capacity: int,
    position: int = 0,
) -> Anchor | None:
    """The skip rules of Alg. 3 line 5b for one anchor with T_a = `limit` and C_a = `capacity`.

    The anchor is skipped when r_a > C_a, and also when the batch of the decodes and a
    alone misses T_a, since verify-and-repair could only end there.
    """
    if base.whole([(anchor.remaining_prefill, anchor.context_tokens)]) > limit:
        return None
    if anchor.remaining_prefill > capacity:
        return None
    pool = _pool(anchor, members, now)
    room = capacity - anchor.remaining_prefill
    bound = 1 + max_count([m.remaining_prefill for m in pool], room)
    return Anchor(anchor, position, limit, capacity, tuple(pool), bound)


def choose(base: PricedQueue, anchor: Anchor, now: float) -> Construction | None:
    """Y_a = Y* ∪ {a}: the knapsack over S_a (eq. 18–20), verified against T_a.

    The lowest-value items are dropped until T̂(decodes + Y_a) ≤ T_a (verify-and-repair);
    None if even a alone then misses it.
    """
    pool, request = anchor.pool, anchor.request
    worth = values(pool, now)
    weights = [m.remaining_prefill for m in pool]
    picked = knapsack(weights, worth, anchor.capacity - request.remaining_prefill)
    kept = sorted(picked, key=lambda i: (worth[i], -i))

    def latency() -> float:
        chosen = [request, *(pool[i] for i in kept)]
        return base.whole([(r.remaining_prefill, r.context_tokens) for r in chosen])

    predicted = latency()
    repaired = False
    while predicted > anchor.limit and kept:
        kept.pop(0)
        repaired = True
        predicted = latency()
    if predicted > anchor.limit:
        return None
    order = sorted(kept)
    return Construction(
        anchor=request,
        chosen=(request, *(pool[i] for i in order)),
        latency=predicted,
        limit=anchor.limit,
        repaired=repaired,
        value=sum(worth[i] for i in order),
        position=anchor.position,
        worth=tuple(worth),
    )


def _check_construct_arguments(
    base: object,
    members: object,
    risky: object,
    now: object,
    t_cur: object,
    cap: object,
    margin: object,
) -> None:
    """`construct_batch`'s arguments, each named when it is not what the function takes."""
    where = "construct_batch"
    _validate.instance(where, "base", base, PricedQueue)
    _arguments.requests(where, "members", members, decoding=False)
    _arguments.requests(where, "risky", risky, decoding=False)
    _validate.seconds(where, "now", now)
    if t_cur is not None:
        _validate.seconds(where, "t_cur", t_cur)
    _validate.integer(where, "cap", cap, 0)
    _arguments.margin(where, margin)


@attrs.frozen(slots=True)
class Attempt:
    """One risky anchor as the search met it: T_a and C_a (eq. 17); the `Anchor` when it
    passed the skip rules, else None; whether it was `solved` (the branch and bound stops
    before an anchor whose bound cannot reach the best |Y| found) and its verified Y_a."""

    request: Request
    limit: float
    capacity: int
    anchor: Anchor | None
    solved: bool
    built: Construction | None


@attrs.frozen(slots=True)
class AnchorSearch:
    """The best Y_a by eq. 21 (None when no anchor fits) and, when recorded, every risky
    anchor in queue order (`Attempt`)."""

    best: Construction | None
    attempts: tuple[Attempt, ...] = ()


def search_anchors(
    base: PricedQueue,
    members: Sequence[Request],
    risky: Sequence[Request],
    now: float,
    t_cur: float | None,
    cap: int,
    margin: float,
    record: bool = False,
) -> AnchorSearch:
    """`construct_batch` on checked arguments; with `record`, every anchor it met kept."""
    met: list[tuple[Request, float, int, Anchor | None]] = []
    capacities: dict[float, int] = {}
    for position, request in enumerate(risky):
        slack = request.slack(now)
        limit = (slack if t_cur is None else min(slack, t_cur)) / margin
        if limit not in capacities:
            capacities[limit] = fill_budget(base, limit, cap)
        capacity = capacities[limit]
        anchor = admit_anchor(base, request, members, now, limit, capacity, position)
        met.append((request, limit, capacity, anchor))
    admitted = [anchor for *_, anchor in met if anchor is not None]
    admitted.sort(key=lambda a: (-a.bound, a.position))
    best: Construction | None = None
    solved: dict[int, Construction | None] = {}
    for anchor in admitted:
        if best is not None and anchor.bound < len(best.chosen):
            break
        built = solved[anchor.position] = choose(base, anchor, now)
        if built is not None and (best is None or built.rank > best.rank):
            best = built
    if not record:
        return AnchorSearch(best)
    attempts = tuple(
        Attempt(request, limit, capacity, anchor, position in solved, solved.get(position))
        for position, (request, limit, capacity, anchor) in enumerate(met)
    )
    return AnchorSearch(best, attempts)


def construct_batch(
    base: PricedQueue,
    members: Sequence[Request],
    risky: Sequence[Request],
    now: float,
    t_cur: float | None,
    cap: int,
    margin: float = 1.0,
) -> Construction | None:
    """The best verified Y_a over every risky anchor by eq. 21, or None if no anchor fits.

    T_a = min(s_a, T_cur) / m, with T_cur only when D_safe is non-empty and m the latency
    margin (T̂·m ≤ min(s_a, T_cur)), and C_a = TimeToBudget(T_a)
    over `base` (eq. 17; anchors sharing T_a share it). Branch and bound on
    eq. 21's first key: anchors are solved in decreasing order of their size bound, and the
    search stops once no remaining bound reaches the best |Y| found. Exact ties in eq. 21 go
    to the anchor earlier in queue order.
    """
    _check_construct_arguments(base, members, risky, now, t_cur, cap, margin)
    return search_anchors(base, members, risky, now, t_cur, cap, margin).best


@attrs.frozen(slots=True)
class ConstructorStep:
    """What the BatchConstructor's stage found: the violation check's candidate batch (None
    when no prefill token is left), whether that batch holds a `promoted` request, the
    anchors it searched (None when it searched none) and its plan (None: it passed)."""

    candidate: CandidateBatch | None = None
    promoted: bool = False
    search: AnchorSearch | None = None
    plan: BatchPlan | None = None


NO_ROOM = ConstructorStep()
"""The stage with no prefill token left: nothing checked, nothing planned."""


def construct_stage(draft: Draft) -> ConstructorStep:
    """The BatchConstructor's stage (Fig. 3, Alg. 3): when the candidate batch puts a request
    at risk (the violation check), the best verified Y_a; no plan when nothing is at risk or
    no anchor fits, or when the candidate batch holds a promoted request
    (`stages.order.promotion_line`: the chunker serves those first, in order), to leave the
    iteration to the chunker."""
    now, cap, margin = draft.now, draft.cap, draft.margin
    if cap <= 0:
        return NO_ROOM
    candidate = check_violations(draft.priced, draft.queue, cap, now, margin)
    if not candidate.risky:
        return ConstructorStep(candidate)
    promoted = promotion_line(draft.config, now)
    if any(r.deadline <= promoted for r in candidate.members):
        return ConstructorStep(candidate, promoted=True)
    members, risky = candidate.members, candidate.risky
    search = search_anchors(
        draft.priced, members, risky, now, draft.t_cur, cap, margin, draft.record
    )
    built = search.best
    if built is None:
        return ConstructorStep(candidate, search=search)
    diagnostics = Diagnostics(
        t_cur=draft.t_cur,
        t_next=draft.t_next,
        candidate_latency=candidate.latency,
        risky=tuple(r.id for r in candidate.risky),
        anchor=built.anchor.id,
        anchor_slack=built.anchor.slack(now),
        repaired=built.repaired,
        margin=margin,
    )
    prefills = [(r, r.remaining_prefill) for r in built.chosen]
    branch, policy = PlanBranch.CONSTRUCTOR, draft.policy
    plan = assemble(draft.admission, prefills, branch, policy, built.latency, diagnostics)
    return ConstructorStep(candidate, False, search, plan)
