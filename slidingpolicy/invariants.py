"""`check_plan`: the invariants every plan of every policy satisfies (SPEC "Invariants").

Invariant 8 (same inputs, same plan) concerns the policy, not one plan: the property tests
check it by planning twice.
"""

from __future__ import annotations

import attrs
import numpy as np

from slidingpolicy.pricing.model import LatencyPredictor
from slidingpolicy.records.plan import BatchPlan, PlanPath
from slidingpolicy.records.request import Request
from slidingpolicy.records.state import SchedulerState
from slidingpolicy.stages.deadlines import safe_decodes

TOLERANCE = 1e-9
"""Relative slack allowed when comparing predicted latencies with deadlines."""


@attrs.frozen(slots=True)
class Violation:
    """One broken invariant (numbered as in the spec) and what broke it."""

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
    margin: float = 1.0,
) -> list[Violation]:
    """The invariants 1–7 that `plan` breaks on `state` (empty when it breaks none).

    `token_budget` enables invariant 4. Invariants 6 and 7 compare the plan's predicted
    latency, times the policy's latency `margin`, with deadlines; given a `predictor`, the
    latency is recomputed from the batch rather than taken from the plan.
    """
    requests = _named(state, plan)
    found, tokens = _allocations_violations(plan, requests)
    found += _token_violations(tokens, requests)
    found += _decode_violations(state, plan, tokens, requests, token_budget)
    found += _budget_violations(state, tokens, token_budget)
    latency = plan.predicted_latency
    if predictor is not None and tokens:
        ids = list(tokens)
        latency = predictor.predict(
            np.array([tokens[i] for i in ids], dtype=np.int64),
            np.array([requests[i].context_tokens for i in ids], dtype=np.int64),
        )
    prefills = {rid: n for rid, n in tokens.items() if not requests[rid].is_decoding}
    if plan.path is PlanPath.CONSTRUCTOR:
        found += _constructor_violations(state, plan, prefills, requests, latency, margin)
    if plan.path is PlanPath.CHUNKER and prefills:
        found += _chunker_violations(state, tokens, requests, latency, margin)
    return found


def _named(state: SchedulerState, plan: BatchPlan) -> dict[str, Request]:
    """The state's decodes and every request the plan names, by id: all the checks read
    (looked up, so that a long queue costs nothing)."""
    requests = {d.id: d for d in state.decoding}
    for rid in (*(a.request_id for a in plan.allocations), *plan.preempted, *plan.deferred):
        if rid not in requests:
            request = state.request(rid)
            if request is not None:
                requests[rid] = request
    return requests


def _allocations_violations(
    plan: BatchPlan, requests: dict[str, Request]
) -> tuple[list[Violation], dict[str, int]]:
    """Invariant 1: every allocation names a request of the state, once; and the tokens of
    each allocated request."""
    found: list[Violation] = []
    tokens: dict[str, int] = {}
    for allocation in plan.allocations:
        rid = allocation.request_id
        if rid not in requests:
            found.append(Violation(1, f"request {rid!r} is not in the state"))
        elif rid in tokens:
            found.append(Violation(1, f"request {rid!r} is allocated twice"))
        else:
            tokens[rid] = allocation.tokens
    return found, tokens


def _token_violations(tokens: dict[str, int], requests: dict[str, Request]) -> list[Violation]:
    """Invariant 2: a decode gets one token, a prefill at most its remainder."""
    found = []
    for rid, count in tokens.items():
        request = requests[rid]
        if request.is_decoding and count != 1:
            found.append(Violation(2, f"request {rid!r} is decoding but got {count} tokens"))
        elif not request.is_decoding and count > request.remaining_prefill:
            found.append(
                Violation(
                    2,
                    f"request {rid!r} got {count} tokens, more than r={request.remaining_prefill}",
                )
            )
    return found


def _decode_violations(
    state: SchedulerState,
    plan: BatchPlan,
    tokens: dict[str, int],
    requests: dict[str, Request],
    token_budget: int | None,
) -> list[Violation]:
    """Invariant 3: every decode is scheduled or listed as left out, and as many run as fit."""
    found = []
    decoding = state.decoding
    left_out = set(plan.preempted) | set(plan.deferred)
    for rid in sorted(left_out):
        if rid not in requests or not requests[rid].is_decoding or rid in tokens:
            found.append(Violation(3, f"{rid!r} is listed as left out but is not a waiting decode"))
    missing = sorted(r.id for r in decoding if r.id not in tokens and r.id not in left_out)
    if missing:
        found.append(Violation(3, f"decodes neither scheduled nor listed as left out: {missing}"))
    scheduled_decodes = sum(1 for r in decoding if r.id in tokens)
    room = len(decoding)
    if token_budget is not None:
        room = min(room, token_budget)
    if state.kv_free_tokens is not None:
        room = min(room, state.kv_free_tokens)
    if scheduled_decodes < room:
        found.append(Violation(3, f"only {scheduled_decodes} decodes scheduled where {room} fit"))
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
    state: SchedulerState,
    tokens: dict[str, int],
    requests: dict[str, Request],
    latency: float,
    margin: float,
) -> list[Violation]:
    """Invariant 7: a chunker batch with prefill meets T_cur (eq. 7) with the margin."""
    safe = safe_decodes([requests[i] for i in tokens if requests[i].is_decoding], state.now)
    if not safe:
        return []
    t_cur = min(d.deadline for d in safe) - state.now
    if _within(latency * margin, t_cur):
        return []
    message = f"predicted latency {_priced(latency, margin)} exceeds T_cur={t_cur:.6g}s"
    return [Violation(7, message)]


def _constructor_violations(
    state: SchedulerState,
    plan: BatchPlan,
    prefills: dict[str, int],
    requests: dict[str, Request],
    latency: float,
    margin: float,
) -> list[Violation]:
    """Invariant 6: a constructor batch runs whole prefills and meets its anchor's slack."""
    found = []
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
