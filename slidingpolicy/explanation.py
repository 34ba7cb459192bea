"""One SlidingServe decision, walked through: every intermediate value of `SlidingServe.plan`.

`explain(policy, state)` presents the record the policy keeps of its decision
(`SlidingServe.decide`, `stages.decision`): the MLPS levels and order (eq. 10–16), T_cur and
T_next and the decodes that bind them (eq. 7–8), the candidate batch and its risky requests,
each anchor's knapsack (eq. 17–21) or why the constructor passed, the window's budget B_Σ and
the split B* (eq. 9) against its alternatives, priced here (greedy eq. 3, the ternary search,
the cost curve), and the plan. It runs no stage of the policy, so it cannot tell another
story than the decision's. Pure: records in, a record out; `slidingpolicy explain` prints it
and draws it.
"""

from __future__ import annotations

import attrs

from slidingpolicy.policies.online import Online
from slidingpolicy.policies.slidingserve import SlidingServe
from slidingpolicy.pricing.split import ternary_split, two_step_cost
from slidingpolicy.records.plan import BatchPlan
from slidingpolicy.records.request import Request
from slidingpolicy.records.state import SchedulerState
from slidingpolicy.stages.chunk import ChunkerStep
from slidingpolicy.stages.construct import Attempt, Construction
from slidingpolicy.stages.decision import Decision
from slidingpolicy.stages.draft import Draft

CURVE_POINTS = 101
"""How many splits b the explanation prices across [B_Σ − cap, min(B_Σ, cap)]."""


@attrs.frozen(slots=True)
class Ranked:
    """One prefill request in MLPS order: r_i, slack s_i, urgency u_i (eq. 13), its level."""

    request: Request
    remaining: int
    slack: float
    urgency: float
    level: str


@attrs.frozen(slots=True)
class Binding:
    """A window bound (T_cur or T_next) and the decode that sets it."""

    value: float
    request: str


@attrs.frozen(slots=True)
class AnchorWork:
    """One risky anchor a: T_a, C_a, and either why it was skipped or its knapsack over S_a
    (eq. 18–20): the pool with each v_j, the items chosen, Y_a and its predicted latency;
    `best` when its Y_a is the one eq. 21 chose."""

    anchor: str
    remaining: int
    limit: float
    capacity: int
    skipped: str = ""
    pool: tuple[tuple[str, int, float], ...] = ()
    chosen: tuple[str, ...] = ()
    latency: float = 0.0
    repaired: bool = False
    rank: tuple[int, float, int, int] | None = None
    best: bool = False


@attrs.frozen(slots=True)
class Split:
    """The window split: B_Σ, B*, greedy's TimeToBudget(T_cur), the ternary search's b, and
    the priced alternatives (b, T̂₁(b), T̂₁(b) + T̂₂(B_Σ − b), feasible: T̂₁(b) ≤ T_cur/m)."""

    budget_sum: int
    chosen: int
    greedy: int
    ternary: int | None
    curve: tuple[tuple[int, float, float, bool], ...]


@attrs.frozen(slots=True)
class Explanation:
    """Everything one decision computed, step by step, and the plan it gave; `given_up` the
    requests it gave up first (`stages.give_up`), which the later steps do not see;
    `candidate_latency` None when the violation check did not run; `handover` why the
    BatchConstructor left the iteration to the chunker ("" when it planned)."""

    state: SchedulerState
    policy: str
    margin: float
    decodes: tuple[str, ...]
    prefill_cap: int
    order: tuple[Ranked, ...]
    t_cur: Binding | None
    t_next: Binding | None
    candidate: tuple[str, ...]
    candidate_latency: float | None
    risky: tuple[str, ...]
    anchors: tuple[AnchorWork, ...]
    split: Split | None
    plan: BatchPlan
    given_up: tuple[str, ...] = ()
    handover: str = ""


def _bindings(draft: Draft, binders: tuple[str, ...]) -> tuple[Binding | None, Binding | None]:
    """T_cur (eq. 7) and T_next (eq. 8), each with the decode that sets it."""
    t_cur, t_next = draft.t_cur, draft.t_next
    if t_cur is None:
        return None, None
    return Binding(t_cur, binders[0]), None if t_next is None else Binding(t_next, binders[1])


def _skipped(attempt: Attempt, best: int) -> str:
    """Why an anchor has no Y_a ("" when it has one); `best` the |Y| the search chose."""
    if attempt.anchor is None:
        return "r_a > C_a or the decodes with a alone miss T_a"
    if not attempt.solved:
        bound = attempt.anchor.bound
        return f"not solved: at most {bound} requests, fewer than the best |Y| = {best}"
    return "" if attempt.built is not None else "a alone misses T_a"


def _work(attempt: Attempt, best: Construction | None) -> AnchorWork:
    """One risky anchor as the search met it (`stages.construct.search_anchors`)."""
    request, anchor, built = attempt.request, attempt.anchor, attempt.built
    r, limit, capacity = request.remaining_prefill, attempt.limit, attempt.capacity
    if anchor is None or built is None:
        size = 0 if best is None else len(best.chosen)
        return AnchorWork(request.id, r, limit, capacity, skipped=_skipped(attempt, size))
    pool = tuple(
        (m.id, m.remaining_prefill, v) for m, v in zip(anchor.pool, built.worth, strict=True)
    )
    return AnchorWork(
        request.id,
        r,
        limit,
        capacity,
        pool=pool,
        chosen=tuple(m.id for m in built.chosen),
        latency=built.latency,
        repaired=built.repaired,
        rank=built.rank,
        best=built is best,
    )


def _split(draft: Draft, step: ChunkerStep | None) -> Split | None:
    """The chunker's numbers, B_Σ, B* and greedy's, and the alternatives it chose among,
    priced over the draft's queue."""
    if step is None or not step.horizon:
        return None
    priced, cap, horizon = draft.priced, draft.cap, step.horizon
    t_cur, total, chosen = horizon[0], step.decision.budget_sum, step.decision.budget
    greedy = step.decision.greedy
    ternary = ternary_split(priced, total, cap, t_cur) if len(horizon) == 2 else None
    lo, hi = max(0, total - cap), min(total, cap)
    points = {chosen, greedy, lo, hi}
    if hi > lo:
        step_size = max(1, (hi - lo) // (CURVE_POINTS - 1))
        points.update(range(lo, hi + 1, step_size))
    curve = tuple(
        (b, priced.prefix(b), two_step_cost(priced, b, total), priced.prefix(b) <= t_cur)
        for b in sorted(points)
    )
    return Split(total, chosen, greedy, ternary, curve)


def _handover(decision: Decision) -> str:
    """Why the BatchConstructor did not plan ("" when it did)."""
    step = decision.constructor
    if step is None:
        return "the BatchConstructor is configured off"
    if step.plan is not None:
        return ""
    if step.candidate is None:
        return "no prefill token is left for it"
    if not step.candidate.risky:
        return "nothing is at risk"
    if step.promoted:
        return "the candidate batch holds a promoted request, which the chunker serves first"
    return "no anchor fits"


def explain(policy: SlidingServe, state: SchedulerState) -> Explanation:
    """`policy`'s decision on `state`, with every step's numbers (module docstring)."""
    decision = policy.decide(state)
    draft, now = decision.draft, decision.draft.now
    order = tuple(
        Ranked(r.request, r.request.remaining_prefill, r.request.slack(now), r.urgency, r.level)
        for r in decision.ranks
    )
    t_cur, t_next = _bindings(draft, decision.binders)
    step = decision.constructor
    candidate = None if step is None else step.candidate
    search = None if step is None else step.search
    return Explanation(
        state=state,
        policy=policy.name,
        margin=draft.margin,
        decodes=tuple(d.id for d in draft.admission.decodes),
        prefill_cap=draft.cap,
        order=order,
        t_cur=t_cur,
        t_next=t_next,
        candidate=() if candidate is None else tuple(m.id for m in candidate.members),
        candidate_latency=None if candidate is None else candidate.latency,
        risky=() if candidate is None else tuple(r.id for r in candidate.risky),
        anchors=() if search is None else tuple(_work(a, search.best) for a in search.attempts),
        split=_split(draft, decision.chunker),
        plan=decision.plan,
        given_up=decision.given_up,
        handover=_handover(decision),
    )


def sliding_of(policy: object) -> SlidingServe | None:
    """The SlidingServe a registered policy plans with (itself, or the one an `Online`
    wrapper starts from); None for a baseline."""
    if isinstance(policy, Online):
        policy = policy.inner
    return policy if isinstance(policy, SlidingServe) else None
