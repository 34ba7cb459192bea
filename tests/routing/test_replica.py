"""A replica's report is what its state holds: its requests counted by phase, its live
waiting ones listed by deadline (late ones only in its totals), the tightest slack of its
decodes, and a prefill rate whose chunk is the largest that meets the tightest TBT SLO by its
predictor (eq. 3's budget at T = L_tbt)."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from slidingpolicy.pricing.features import add_chunk, decode_terms
from slidingpolicy.pricing.model import LatencyPredictor
from slidingpolicy.records.state import SchedulerState
from slidingpolicy.routing import report_of
from slidingpolicy.routing.reporting import _fitting_chunk
from slidingpolicy.testing.strategies import realistic_predictors, states


@given(state=states(), predictor=realistic_predictors())
def test_a_report_counts_what_the_state_holds(
    state: SchedulerState, predictor: LatencyPredictor
) -> None:
    report = report_of(state, predictor, 2048)
    waiting = state.prefill_candidates
    live = sorted((r.deadline, r.remaining_prefill) for r in waiting if r.deadline > state.now)
    assert report.made_at == report.free_at == state.now
    assert report.queued == len(waiting)
    assert report.queued_tokens == sum(r.remaining_prefill for r in waiting)
    assert report.decoding == len(state.decoding)
    assert report.tightest_slack == min(
        (r.deadline - state.now for r in state.decoding), default=math.inf
    )
    for deadline, _ in live:
        assert report.tokens_ahead(deadline) >= sum(t for d, t in live if d <= deadline)
    assert report.tokens_ahead(math.inf) == sum(t for _, t in live)
    assert report.prefill_rate > 0.0


@given(
    predictor=realistic_predictors(),
    decodes=st.integers(1, 200),
    context=st.integers(0, 4000),
    target=st.floats(0.005, 0.5),
    budget=st.integers(2, 4096),
)
def test_the_rate_s_chunk_is_the_largest_that_meets_the_tbt(
    predictor: LatencyPredictor, decodes: int, context: int, target: float, budget: int
) -> None:
    base = decode_terms(decodes, decodes * context)

    def fits(b: int) -> bool:
        return predictor.price(add_chunk(base, b, 0)) * predictor.margin <= target

    chunk = _fitting_chunk(predictor, base, target, budget)
    if fits(2):
        assert chunk is not None
        assert 2 <= chunk <= budget
        assert fits(chunk)
        assert chunk == budget or not fits(chunk + 1)
    else:
        assert chunk is None


@given(state=states(), predictor=realistic_predictors())
def test_a_replica_keeps_pace_where_a_chunk_fits_beside_its_decodes(
    state: SchedulerState, predictor: LatencyPredictor
) -> None:
    report = report_of(state, predictor, 2048)
    decoding = state.decoding
    base = decode_terms(len(decoding), sum(r.context_tokens for r in decoding))
    tbt = min((r.tbt_slo for r in decoding), default=math.inf)
    fits = predictor.price(add_chunk(base, 2, 0)) * predictor.margin <= tbt
    assert report.keeps_pace == fits
    if not fits:
        assert report.prefill_rate == 2048 / predictor.price(add_chunk(base, 2048, 0))
