"""A replica's report, computed from its own state and predictor (`report_of`): pure, so the
offline cluster and a real replica report alike.

The prefill rate ρ is what the replica's predictor says one iteration runs: with no decode,
a whole budget B of prefill in T̂(B); beside decodes, the largest chunk b ≤ B whose batch
T̂(decodes + b) (the predictor's margin m applied, as a policy compares it) fits the
tightest TBT SLO L among them, in T̂(decodes + b) — the pace a deadline-aware policy keeps so
that its decodes stay on time (eq. 3's budget, at T = L). Where not even two tokens fit,
the decodes are late already and a policy fills the budget (eq. 7's empty D_safe): B in
T̂(decodes + B), and the report says its decodes do not keep pace (`keeps_pace`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from slidingpolicy import _validate
from slidingpolicy.pricing.features import Terms, add_chunk, decode_terms
from slidingpolicy.pricing.model import LatencyPredictor
from slidingpolicy.records.request import Request
from slidingpolicy.records.state import SchedulerState
from slidingpolicy.routing.replica_report import ReplicaReport, merge_points


def report_of(
    state: SchedulerState,
    predictor: LatencyPredictor,
    token_budget: int,
    free_at: float | None = None,
) -> ReplicaReport:
    """The report of a replica in `state` (every request it holds, the ones its KV cannot
    take yet included), made at `state.now`, its next step at `free_at` (default: now),
    its prefill rate by `predictor` within `token_budget` tokens an iteration."""
    budget = _validate.integer("replica report", "token_budget", token_budget, 2)
    now = state.now
    start = now if free_at is None else free_at
    return report_from(now, start, state.decoding, state.prefill_candidates, predictor, budget)


def report_from(
    now: float,
    free_at: float,
    decoding: Sequence[Request],
    queued: Iterable[Request],
    predictor: LatencyPredictor,
    token_budget: int,
    met: int | None = None,
) -> ReplicaReport:
    """`report_of` from the decoding and the waiting or prefilling requests themselves
    (what an engine that keeps them apart passes without building a state), with the
    requests the replica has met so far where it counts them (`ReplicaReport.met`)."""
    waiting = [(r.deadline, r.remaining_prefill) for r in queued]
    live = sorted((d, tokens) for d, tokens in waiting if d > now)
    cumulative: list[tuple[float, int]] = []
    total = 0
    for deadline, tokens in live:
        total += tokens
        cumulative.append((deadline, total))
    context = sum(r.context_tokens for r in decoding)
    tbt = min((r.tbt_slo for r in decoding), default=None)
    rate, keeps_pace = prefill_pace(predictor, len(decoding), context, tbt, token_budget)
    return ReplicaReport(
        made_at=now,
        free_at=free_at,
        queued=len(waiting),
        queued_tokens=sum(tokens for _, tokens in waiting),
        decoding=len(decoding),
        tightest_slack=min((r.deadline - free_at for r in decoding), default=math.inf),
        prefill_rate=rate,
        ahead=merge_points(cumulative),
        keeps_pace=keeps_pace,
        met=met,
    )


def prefill_pace(
    predictor: LatencyPredictor, decodes: int, context: int, tbt: float | None, budget: int
) -> tuple[float, bool]:
    """Prefill tokens per second beside `decodes` decodes holding `context` tokens, the
    tightest of their TBT SLOs `tbt`, and whether a chunk fits beside them within it
    (module docstring)."""
    base = decode_terms(decodes, context)
    fitting = None if tbt is None else _fitting_chunk(predictor, base, tbt, budget)
    chunk = budget if fitting is None else fitting
    latency = predictor.price(add_chunk(base, chunk, 0))
    return (chunk / latency if latency > 0.0 else 0.0), tbt is None or fitting is not None


def _fitting_chunk(
    predictor: LatencyPredictor, base: Terms, target: float, budget: int
) -> int | None:
    """The largest chunk b in [2, budget] with T̂(base + b)·m ≤ target, by bisection (T̂ is
    non-decreasing in one chunk: proofs/monotonicity.md); None when none fits."""
    margin = predictor.margin

    def fits(b: int) -> bool:
        return predictor.price(add_chunk(base, b, 0)) * margin <= target

    if not fits(2):
        return None
    lo, hi = 2, budget
    while lo < hi:
        middle = (lo + hi + 1) // 2
        if fits(middle):
            lo = middle
        else:
            hi = middle - 1
    return lo
