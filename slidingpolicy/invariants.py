"""`check_plan`: the invariants every plan of every policy satisfies, numbered 1–8 as in
the checker's page (docs/checker.md, "The invariants").

Invariant 8 (same inputs, same plan) concerns the policy, not one plan: the property tests
check it by planning twice.
"""

from __future__ import annotations

import math

import attrs
import numpy as np

from slidingpolicy import _arguments, _validate
from slidingpolicy.pricing.model import LatencyPredictor
from slidingpolicy.records.plan import BatchPlan, PlanBranch
from slidingpolicy.records.request import Request
from slidingpolicy.records.state import SchedulerState

TOLERANCE = 1e-9
"""Relative slack allowed when comparing predicted latencies with deadlines."""


@attrs.frozen(slots=True)
class Violation:
    """One broken invariant (by its number) and what broke it."""

    invariant: int
    message: str

    def __str__(self) -> str:
        return f"invariant {self.invariant}: {self.message}"


def _within(latency: float, limit: float) -> bool:
    return latency <= limit + TOLERANCE * max(1.0, abs(limit))


def _priced(latency: float, margin: float) -> str:
    """How a violation message shows T̂ (and the margin when there is one)."""
    return f"{latency:.6g}s" if margin == 1.0 else f"{latency:.6g}s × margin {margin:.6g}"


def check_plan(
    state: SchedulerState,
    plan: BatchPlan,
    token_budget: int | None = None,
    predictor: LatencyPredictor | None = None,
    margin: float | None = None,
) -> list[Violation]:
    """The invariants 1–7 that `plan` breaks on `state` (empty when it breaks none).

    `token_budget` enables invariant 4. Invariants 6 and 7 compare the plan's predicted
    latency, times the latency margin in force at that step, with deadlines: the plan's own
    (`Diagnostics.margin`, what it was priced with) unless `margin` is given. Given a
    `predictor`, the latency is recomputed from the batch rather than taken from the plan.
    """
    _check_arguments(state, plan, token_budget, predictor, margin)
    if margin is None:
        margin = plan.diagnostics.margin
    batch = _Batch.of(state, plan)
    found = batch.unknown + _given_up_violations(state, plan, batch) + batch.sized
    found += _decode_violations(state, plan, batch, token_budget)
    found += _budget_violations(state, batch.tokens, token_budget)
    latency = plan.predicted_latency
    if predictor is not None and batch.tokens:
        ids = list(batch.tokens)
        latency = predictor.predict(
            np.array([batch.tokens[i] for i in ids], dtype=np.int64),
            np.array([batch.requests[i].context_tokens for i in ids], dtype=np.int64),
        )
    if plan.branch is PlanBranch.CONSTRUCTOR:
        found += _constructor_violations(state, plan, batch, latency, margin)
    if plan.branch is PlanBranch.CHUNKER and batch.prefills:
        found += _chunker_violations(state, batch, latency, margin)
    return found


def _check_arguments(
    state: object, plan: object, token_budget: object, predictor: object, margin: object
) -> None:
    """`check_plan`'s arguments, each named when it is not what the function takes."""
    where = "check_plan"
    _validate.instance(where, "state", state, SchedulerState)
    _validate.instance(where, "plan", plan, BatchPlan)
    if token_budget is not None:
        _validate.integer(where, "token_budget", token_budget, 1)
    if predictor is not None:
        _validate.instance(where, "predictor", predictor, LatencyPredictor)
    if margin is not None:
        _arguments.margin(where, margin)


@attrs.define(slots=True)
class _Batch:
    """The plan's allocations read once against the state (invariants 1 and 2 on the way):
    the tokens and record of each allocated request, its prefills, and the least deadline
    of its decodes still ahead of `now` (what invariant 7 bounds by)."""

    tokens: dict[str, int] = attrs.Factory(dict)
    requests: dict[str, Request] = attrs.Factory(dict)
    prefills: dict[str, int] = attrs.Factory(dict)
    decodes: int = 0
    first_deadline: float = math.inf
    unknown: list[Violation] = attrs.Factory(list)
    """Invariant 1: allocations of requests not in the state, or allocated twice."""
    sized: list[Violation] = attrs.Factory(list)
    """Invariant 2: a decode given other than one token, a prefill more than its remainder."""

    @classmethod
    def of(cls, state: SchedulerState, plan: BatchPlan) -> _Batch:
        """Each allocation looked up in the state (so that a long queue costs nothing)."""
        batch = cls()
        tokens, requests, prefills = batch.tokens, batch.requests, batch.prefills
        now, lookup = state.now, state.request
        for allocation in plan.allocations:
            rid, count = allocation.request_id, allocation.tokens
            request = lookup(rid)
            if request is None:
                batch.unknown.append(Violation(1, f"request {rid!r} is not in the state"))
                continue
            if rid in tokens:
                batch.unknown.append(Violation(1, f"request {rid!r} is allocated twice"))
                continue
            tokens[rid] = count
            requests[rid] = request
            if request.is_decoding:
                batch.decodes += 1
                if count != 1:
                    message = f"request {rid!r} is decoding but got {count} tokens"
                    batch.sized.append(Violation(2, message))
                if now < request.deadline < batch.first_deadline:
                    batch.first_deadline = request.deadline
            else:
                prefills[rid] = count
                if count > request.remaining_prefill:
                    message = (
                        f"request {rid!r} got {count} tokens, more than "
                        f"r={request.remaining_prefill}"
                    )
                    batch.sized.append(Violation(2, message))
        return batch


def _given_up_violations(state: SchedulerState, plan: BatchPlan, batch: _Batch) -> list[Violation]:
    """Invariant 1, of the requests given up: each a waiting or prefilling request of the
    state, named once, and given no tokens."""
    found = []
    seen: set[str] = set()
    for rid in plan.given_up:
        request = state.request(rid)
        if request is None or request.is_decoding:
            found.append(Violation(1, f"{rid!r} is given up but is not a waiting request"))
        elif rid in seen:
            found.append(Violation(1, f"{rid!r} is given up twice"))
        elif rid in batch.tokens:
            found.append(Violation(1, f"{rid!r} is given up and allocated"))
        seen.add(rid)
    return found


def _decode_violations(
    state: SchedulerState, plan: BatchPlan, batch: _Batch, token_budget: int | None
) -> list[Violation]:
    """Invariant 3: every decode is scheduled or listed as left out, and as many run as fit."""
    found = []
    decoding = state.decoding
    left_out = set(plan.preempted) | set(plan.deferred)
    for rid in sorted(left_out):
        request = state.request(rid)
        if request is None or not request.is_decoding or rid in batch.tokens:
            found.append(Violation(3, f"{rid!r} is listed as left out but is not a waiting decode"))
    if left_out or batch.decodes < len(decoding):
        tokens = batch.tokens
        missing = sorted(r.id for r in decoding if r.id not in tokens and r.id not in left_out)
        if missing:
            message = f"decodes neither scheduled nor listed as left out: {missing}"
            found.append(Violation(3, message))
    room = len(decoding)
    if token_budget is not None:
        room = min(room, token_budget)
    if state.kv_free_tokens is not None:
        room = min(room, state.kv_free_tokens)
    if batch.decodes < room:
        found.append(Violation(3, f"only {batch.decodes} decodes scheduled where {room} fit"))
    return found


def _budget_violations(
    state: SchedulerState, tokens: dict[str, int], token_budget: int | None
) -> list[Violation]:
    """Invariants 4 and 5: the plan's tokens fit the token budget and the free KV slots."""
    found = []
    total = sum(tokens.values())
    if token_budget is not None and total > token_budget:
        found.append(Violation(4, f"{total} tokens exceed the token budget {token_budget}"))
    if state.kv_free_tokens is not None and total > state.kv_free_tokens:
        found.append(
            Violation(5, f"{total} new KV tokens exceed kv_free_tokens={state.kv_free_tokens}")
        )
    return found


def _chunker_violations(
    state: SchedulerState, batch: _Batch, latency: float, margin: float
) -> list[Violation]:
    """Invariant 7: a chunker batch with prefill meets T_cur (eq. 7) with the margin, T_cur
    over the batch's decodes whose deadline has not passed (D_safe, eq. 2)."""
    if batch.first_deadline == math.inf:
        return []
    t_cur = batch.first_deadline - state.now
    if _within(latency * margin, t_cur):
        return []
    message = f"predicted latency {_priced(latency, margin)} exceeds T_cur={t_cur:.6g}s"
    return [Violation(7, message)]


def _constructor_violations(
    state: SchedulerState,
    plan: BatchPlan,
    batch: _Batch,
    latency: float,
    margin: float,
) -> list[Violation]:
    """Invariant 6: a constructor batch runs whole prefills and meets its anchor's slack."""
    found = []
    prefills, requests = batch.prefills, batch.requests
    for rid, count in prefills.items():
        remaining = requests[rid].remaining_prefill
        if count != remaining:
            found.append(Violation(6, f"request {rid!r} got {count} of its r={remaining} tokens"))
    anchor = plan.diagnostics.anchor
    if anchor is None or anchor not in prefills:
        found.append(Violation(6, f"anchor {anchor!r} is not among the chosen prefills"))
        return found
    slack = requests[anchor].slack(state.now)
    if not _within(latency * margin, slack):
        found.append(
            Violation(
                6,
                f"predicted latency {_priced(latency, margin)} exceeds the anchor's slack "
                f"{slack:.6g}s",
            )
        )
    return found
