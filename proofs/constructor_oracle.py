"""Oracles for BatchConstructor (eq. 17–21): every feasible (anchor, subset) pair, enumerated
exhaustively or chosen by a lexicographic MILP.

Feasible, as the claim states it: the anchor a is risky; its batch alone (decodes and a)
has T̂ ≤ T_a = min(s_a, T_cur); r_a ≤ C_a, the greedy-fill budget at T_a of the candidate
queue the violation check priced, capped at `cap` (here by the linear scan of
budget_oracle); the subset lies in S_a (live members j ≠ a with s_j ≥ s_a) and
Σr ≤ C_a − r_a. Values are constructor.values(S_a, now).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np

from proofs.budget_oracle import scan_price
from proofs.lex import NEAR, Rank, Ranks, subsets
from proofs.milp import cp, lexicographic, solution
from slidingpolicy.pricing.model import LatencyPredictor
from slidingpolicy.pricing.queue import PricedQueue
from slidingpolicy.records.request import Request
from slidingpolicy.stages.construct import values


@attrs.frozen(slots=True)
class AnchorProblem:
    """One feasible anchor: its limit T_a, its pool S_a, their values, and C_a − r_a."""

    anchor: Request
    limit: float
    pool: tuple[Request, ...]
    worth: tuple[float, ...]
    room: int

    @property
    def weights(self) -> list[int]:
        """r_j over S_a."""
        return [m.remaining_prefill for m in self.pool]


def limit_of(anchor: Request, now: float, t_cur: float | None) -> float:
    """T_a = min(s_a, T_cur), T_cur only when D_safe is non-empty (None otherwise)."""
    slack = anchor.deadline - now
    return slack if t_cur is None else min(slack, t_cur)


def explicit_latency(
    predictor: LatencyPredictor, decode_contexts: Sequence[int], chosen: Sequence[Request]
) -> float:
    """T̂ of the decodes (1 token each) and the whole remainder of each chosen request."""
    chunks = [1] * len(decode_contexts) + [r.remaining_prefill for r in chosen]
    cached = list(decode_contexts) + [r.context_tokens for r in chosen]
    return predictor.predict(np.array(chunks, dtype=np.int64), np.array(cached, dtype=np.int64))


def feasible_anchors(
    predictor: LatencyPredictor,
    decode_contexts: Sequence[int],
    queue: PricedQueue,
    members: Sequence[Request],
    risky: Sequence[Request],
    now: float,
    t_cur: float | None,
    cap: int,
) -> list[AnchorProblem]:
    """Every risky anchor that passes the skip rules, with its knapsack; `queue` is the
    candidate queue's fill beside the decodes."""
    found = []
    for anchor in risky:
        limit = limit_of(anchor, now, t_cur)
        slack = anchor.deadline - now
        pool = tuple(
            m
            for m in members
            if m.id != anchor.id and m.deadline > now and m.deadline - now >= slack
        )
        if explicit_latency(predictor, decode_contexts, [anchor]) > limit:
            continue
        budget = scan_price(queue, limit, cap)
        if anchor.remaining_prefill > budget:
            continue
        worth = tuple(values(pool, now))
        found.append(AnchorProblem(anchor, limit, pool, worth, budget - anchor.remaining_prefill))
    return found


def scale_of(problems: Sequence[AnchorProblem]) -> float:
    """The value scale ties are measured on: max(1, largest Σ values of a pool)."""
    return max([1.0, *(float(sum(p.worth)) for p in problems)])


def every_choice(problems: Sequence[AnchorProblem]) -> Ranks:
    """(|Y|, Σv over Y − a, Σr over Y) of every feasible (anchor, subset) pair."""
    parts = []
    for p in problems:
        ranks = subsets(p.weights, p.worth, p.room)
        parts.append(Ranks(ranks.count + 1, ranks.value, ranks.weight + p.anchor.remaining_prefill))
    return Ranks.join(parts)


def exhaustive(problems: Sequence[AnchorProblem]) -> Rank:
    """The eq. 21 optimum by enumeration (problems must be non-empty)."""
    return every_choice(problems).best(scale_of(problems))


def milp(problems: Sequence[AnchorProblem]) -> Rank:
    """The eq. 21 optimum by a lexicographic MILP: z_a picks one anchor, x_a its subset
    (x_a ≤ z_a, r·x_a ≤ (C_a − r_a)·z_a); max count, then value, then weight."""
    z = cp.Variable(len(problems), boolean=True)
    count, value, weight = cp.sum(z), cp.Constant(0.0), cp.Constant(0.0)
    constraints = [cp.sum(z) == 1]
    xs: list[Any] = []
    for i, p in enumerate(problems):
        weight = weight + p.anchor.remaining_prefill * z[i]
        if not p.pool:
            xs.append(None)
            continue
        x = cp.Variable(len(p.pool), boolean=True)
        xs.append(x)
        r = np.asarray(p.weights, dtype=np.float64)
        constraints += [x <= z[i], r @ x <= p.room * z[i]]
        count = count + cp.sum(x)
        value = value + np.asarray(p.worth) @ x
        weight = weight + r @ x
    objectives = [count, value, weight]
    lexicographic(objectives, constraints, [0.5, NEAR * scale_of(problems), 0.5])
    chosen = int(np.argmax(solution(z)))
    p, x = problems[chosen], xs[chosen]
    picked = [] if x is None else [j for j in range(len(p.pool)) if solution(x)[j] > 0.5]
    return Rank(
        1 + len(picked),
        float(sum(p.worth[j] for j in picked)),
        p.anchor.remaining_prefill + sum(p.weights[j] for j in picked),
    )
