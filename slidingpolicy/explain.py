"""One SlidingServe decision, walked through: every intermediate value of `SlidingServe.plan`.

`explain(policy, state)` recomputes the plan with the same stage functions the policy chains
(`stages.draft.prepare`, `check_violations`, `admit_anchor` and `choose`, `sliding_chunk`) and
keeps what each step found: the MLPS levels and order (eq. 10–16), T_cur and T_next and the
decodes that bind them (eq. 7–8), the candidate batch and its risky requests, each anchor's
knapsack (eq. 17–21), the window's budget B_Σ and the split B* against its alternatives
(eq. 9, with greedy eq. 3 and the ternary search beside it), and the plan. Pure: records in,
a record out; `slidingpolicy explain` prints it and draws it.
"""

from __future__ import annotations

import attrs

from slidingpolicy.policies.online import Online
from slidingpolicy.policies.slidingserve import SlidingServe, SlidingState
from slidingpolicy.pricing.budget import fill_budget
from slidingpolicy.pricing.queue import PricedQueue
from slidingpolicy.pricing.split import ternary_split, two_step_cost
from slidingpolicy.records.plan import BatchPlan, PlanBranch
from slidingpolicy.records.request import Request
from slidingpolicy.records.state import SchedulerState
from slidingpolicy.stages.check import check_violations
from slidingpolicy.stages.chunk import sliding_chunk
from slidingpolicy.stages.construct import admit_anchor, choose, values
from slidingpolicy.stages.draft import Draft, prepare
from slidingpolicy.stages.give_up import hopeless, without
from slidingpolicy.stages.order import LIVE, PROMOTED, is_urgent, mlps_keys, urgency

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
    (eq. 18–20): the pool with each v_j, the items chosen, Y_a and its predicted latency."""

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
    requests it gave up first (`stages.give_up`), which the later steps do not see."""

    state: SchedulerState
    policy: str
    margin: float
    decodes: tuple[str, ...]
    prefill_cap: int
    order: tuple[Ranked, ...]
    t_cur: Binding | None
    t_next: Binding | None
    candidate: tuple[str, ...]
    candidate_latency: float
    risky: tuple[str, ...]
    anchors: tuple[AnchorWork, ...]
    split: Split | None
    plan: BatchPlan
    given_up: tuple[str, ...] = ()


def _level(request: Request, policy: SlidingServe, now: float, throughput: float) -> str:
    """The request's MLPS level, named: its key's (g_i, stage_i) (eq. 15), then e_i."""
    config = policy.config
    protected, stage, _ = mlps_keys(now, throughput, config)(request)[:3]
    if protected == 0:
        return "protected"
    if stage != LIVE:
        return "promoted" if stage == PROMOTED else "late"
    r, d = request.remaining_prefill, request.deadline
    urgent = is_urgent(r, d, now, throughput, config.urgency_threshold, config.epsilon)
    return "urgent" if urgent else "calm"


def _bindings(draft: Draft) -> tuple[Binding | None, Binding | None]:
    """T_cur = min over D_safe of s_i (eq. 7), T_next = min of s_i − T_cur + L_tbt (eq. 8),
    each with the decode that attains it."""
    now = draft.now
    safe = [d for d in draft.admission.decodes if d.deadline > now]
    if not safe:
        return None, None
    tight = min(safe, key=lambda d: (d.deadline - now, d.id))
    t_cur = tight.deadline - now
    after = min(safe, key=lambda d: (d.deadline - now - t_cur + d.tbt_slo, d.id))
    return (
        Binding(t_cur, tight.id),
        Binding(after.deadline - now - t_cur + after.tbt_slo, after.id),
    )


def _anchor(draft: Draft, request: Request, members: tuple[Request, ...], k: int) -> AnchorWork:
    """What `construct_batch` does for one risky anchor, kept."""
    now, base = draft.now, draft.fill
    slack = request.slack(now)
    limit = (slack if draft.t_cur is None else min(slack, draft.t_cur)) / draft.margin
    capacity = fill_budget(base, limit, draft.cap)
    admitted = admit_anchor(base, request, members, now, limit, capacity, k)
    if admitted is None:
        reason = f"r_a = {request.remaining_prefill} > C_a or the decodes with a alone miss T_a"
        return AnchorWork(request.id, request.remaining_prefill, limit, capacity, skipped=reason)
    worth = values(admitted.pool, now)
    pool = tuple((m.id, m.remaining_prefill, v) for m, v in zip(admitted.pool, worth, strict=True))
    built = choose(base, admitted, now)
    if built is None:
        return AnchorWork(
            request.id, request.remaining_prefill, limit, capacity, "a alone misses T_a", pool
        )
    chosen = tuple(r.id for r in built.chosen)
    return AnchorWork(
        request.id,
        request.remaining_prefill,
        limit,
        capacity,
        "",
        pool,
        chosen,
        built.latency,
        built.repaired,
        built.rank,
    )


def _split(draft: Draft, fill: PricedQueue) -> Split | None:
    """The chunker's numbers: B_Σ, B*, and the alternatives it chose among."""
    horizon = tuple(w / draft.margin for w in draft.horizon)
    decision = sliding_chunk(fill, horizon, draft.cap, draft.config)
    if not horizon:
        return None
    t_cur, cap, total = horizon[0], draft.cap, decision.budget_sum
    greedy = fill_budget(fill, t_cur, cap)
    ternary = ternary_split(fill, total, cap, t_cur) if len(horizon) == 2 else None
    lo, hi = max(0, total - cap), min(total, cap)
    points = {decision.budget, greedy, lo, hi}
    if hi > lo:
        step = max(1, (hi - lo) // (CURVE_POINTS - 1))
        points.update(range(lo, hi + 1, step))
    curve = tuple(
        (b, fill.prefix(b), two_step_cost(fill, b, total), fill.prefix(b) <= t_cur)
        for b in sorted(points)
    )
    return Split(total, decision.budget, greedy, ternary, curve)


def explain(policy: SlidingServe, state: SchedulerState) -> Explanation:
    """`policy`'s decision on `state`, with every step's numbers (module docstring)."""
    plan, _ = policy.plan(SlidingState(), state)
    given_up = hopeless(state, policy.config)
    rest = without(state, given_up) if given_up else state
    draft = prepare(policy.predictor, policy.config, policy.margin, rest, policy.name)
    now, throughput = state.now, state.prefill_throughput
    order = tuple(
        Ranked(r, r.remaining_prefill, r.slack(now), _u(r, now, throughput, policy), lvl)
        for r in draft.queue
        for lvl in (_level(r, policy, now, throughput),)
    )
    t_cur, t_next = _bindings(draft)
    candidate = check_violations(draft.fill, draft.queue, draft.cap, now, draft.margin)
    anchors: tuple[AnchorWork, ...] = ()
    if policy.config.constructor and draft.cap > 0 and candidate.risky:
        anchors = tuple(
            _anchor(draft, r, candidate.members, k) for k, r in enumerate(candidate.risky)
        )
    return Explanation(
        state=state,
        policy=policy.name,
        margin=draft.margin,
        decodes=tuple(d.id for d in draft.admission.decodes),
        prefill_cap=draft.cap,
        order=order,
        t_cur=t_cur,
        t_next=t_next,
        candidate=tuple(m.id for m in candidate.members),
        candidate_latency=candidate.latency,
        risky=tuple(r.id for r in candidate.risky),
        anchors=anchors,
        split=_split(draft, draft.fill) if plan.branch is PlanBranch.CHUNKER else None,
        plan=plan,
        given_up=given_up,
    )


def sliding_of(policy: object) -> SlidingServe | None:
    """The SlidingServe a registered policy plans with (itself, or the one an `Online`
    wrapper starts from); None for a baseline."""
    if isinstance(policy, Online):
        policy = policy.inner
    return policy if isinstance(policy, SlidingServe) else None


def _u(request: Request, now: float, throughput: float, policy: SlidingServe) -> float:
    r, d, epsilon = request.remaining_prefill, request.deadline, policy.config.epsilon
    return urgency(r, d, now, throughput, epsilon)
