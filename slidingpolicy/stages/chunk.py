"""SlidingChunker (eq. 7–9, Alg. 1): how many prefill tokens to run now, planning a window ahead."""

from __future__ import annotations

import attrs

from slidingpolicy import _validate
from slidingpolicy.pricing.budget import fill_budget
from slidingpolicy.pricing.queue import PricedQueue
from slidingpolicy.pricing.split import exact_split, ternary_split, window_split
from slidingpolicy.records.plan import BatchPlan, Diagnostics, PlanBranch
from slidingpolicy.records.sliding_config import MAX_WINDOW, SlidingConfig
from slidingpolicy.stages.assemble import greedy_plan
from slidingpolicy.stages.draft import Draft


@attrs.frozen(slots=True)
class ChunkDecision:
    """B* (prefill tokens now), B_Σ (the window's budget) and `greedy`, TimeToBudget(T_cur)
    (eq. 3), the greedy single step; B_Σ = greedy = B* without a window or without D_safe."""

    budget: int
    budget_sum: int
    greedy: int


def sliding_chunk(
    priced: PricedQueue, horizon: tuple[float, ...], cap: int, config: SlidingConfig
) -> ChunkDecision:
    """B* for this iteration.

    `horizon` holds W_1..W_k (eq. 7–8, `deadlines.window_deadlines`); empty when D_safe is
    empty, and then the queue fills up to `cap`. Otherwise B_Σ = TimeToBudget(W_k) over up
    to k·cap tokens, split by eq. 9 (window 2) or its k-iteration form, and B* meets
    T̂₁(B*) ≤ T_cur: we plan k iterations and execute the first (receding horizon).
    `window = 1` is the greedy single step, B* = TimeToBudget(T_cur) (eq. 3).

    No deferral (docs/decisions.md): eq. 9 charges nothing for work left to the next
    iteration, which is re-planned, so the split may postpone forever. When the whole queue
    fits now within T_cur it runs now, and a split that would run no prefill now runs
    TimeToBudget(T_cur) instead.
    """
    _check_chunk_arguments(priced, horizon, cap, config)
    if not horizon:
        budget = min(cap, priced.total)
        return ChunkDecision(budget, budget, budget)
    t_cur = horizon[0]
    window = len(horizon)
    now = fill_budget(priced, t_cur, cap)
    if window == 1 or now == priced.total:
        return ChunkDecision(now, now, now)
    budget_sum = fill_budget(priced, horizon[-1], window * cap)
    if window > 2:
        budget = window_split(priced, budget_sum, cap, t_cur, window)
    else:
        split = exact_split if config.split_search == "exact" else ternary_split
        budget = split(priced, budget_sum, cap, t_cur)
    return ChunkDecision(budget if budget > 0 else now, budget_sum, now)


def _check_chunk_arguments(priced: object, horizon: object, cap: object, config: object) -> None:
    """`sliding_chunk`'s arguments, each named when it is not what the function takes."""
    where = "sliding_chunk"
    _validate.instance(where, "priced", priced, PricedQueue)
    if not isinstance(horizon, tuple) or len(horizon) > MAX_WINDOW:
        raise _validate.fail(where, "horizon", f"must be a tuple of at most {MAX_WINDOW} times")
    for k, deadline in enumerate(horizon):
        _validate.seconds(where, f"horizon[{k}]", deadline)
    _validate.integer(where, "cap", cap, 0)
    _validate.instance(where, "config", config, SlidingConfig)


@attrs.frozen(slots=True)
class ChunkerStep:
    """What the SlidingChunker's stage found: the deadlines it planned against, W_j / m
    (empty without D_safe), its `ChunkDecision` and its plan."""

    horizon: tuple[float, ...]
    decision: ChunkDecision
    plan: BatchPlan


def chunk_stage(draft: Draft) -> ChunkerStep:
    """The SlidingChunker's stage (Fig. 3): the admitted decodes plus a greedy fill of B*
    tokens down the ordered queue, B* planned against the window's deadlines over m."""
    horizon = tuple(w / draft.margin for w in draft.horizon)
    decision = sliding_chunk(draft.priced, horizon, draft.cap, draft.config)
    diagnostics = Diagnostics(
        t_cur=draft.t_cur,
        t_next=draft.t_next,
        budget_sum=decision.budget_sum,
        margin=draft.margin,
    )
    branch, policy = PlanBranch.CHUNKER, draft.policy
    plan = greedy_plan(
        draft.priced, draft.admission, draft.queue, decision.budget, branch, policy, diagnostics
    )
    return ChunkerStep(horizon, decision, plan)
