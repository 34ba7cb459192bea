"""Metrics against hand-computed cases (one definition each, in slidingpolicy/metrics/)."""

from __future__ import annotations

import math

import attrs
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from slidingpolicy.metrics import (
    Stats,
    TokenLog,
    duration_unit,
    exact_sum,
    merged_percentiles,
    outcome,
    percentile,
    percentiles,
    summarize,
    token_deadline,
)
from slidingpolicy.metrics.summary import _gap_stats
from slidingpolicy.workloads import RequestSpec, Workload


def _workload(*specs: tuple[float, int, int, float, float]) -> Workload:
    return Workload(
        "hand",
        tuple(
            RequestSpec(f"r{i}", a, p, o, ttft, tbt, "test")
            for i, (a, p, o, ttft, tbt) in enumerate(specs)
        ),
    )


def test_token_deadline_is_eq_1() -> None:
    d = token_deadline(np.array([2.0]), np.array([1.0]), np.array([0.1]), np.array([3]))
    assert d[0] == pytest.approx(2.0 + 1.0 + 2 * 0.1)


def test_nearest_rank_percentiles() -> None:
    values = np.array([5.0, 1.0, 3.0, 2.0, 4.0])
    assert percentile(values, 50) == 3.0
    assert percentile(values, 90) == 5.0
    assert percentile(values, 20) == 1.0
    assert percentile(values, 21) == 2.0
    assert math.isnan(percentile(np.zeros(0), 50))


def test_weighted_percentile_counts_each_value_weight_times() -> None:
    values = np.array([1.0, 10.0])
    weights = np.array([9, 1], dtype=np.int64)
    assert percentile(values, 90, weights) == 1.0
    assert percentile(values, 91, weights) == 10.0


def _log(workload: Workload, times: dict[int, list[float]]) -> TokenLog:
    log = TokenLog(workload.columns())
    events = sorted((t, i) for i, ts in times.items() for t in ts)
    for t, i in events:
        log.record(np.array([i], dtype=np.int64), t)
    return log


def test_slo_attained_iff_every_token_by_its_deadline() -> None:
    # arrival 0, TTFT 1 s, TBT 0.1 s, 3 tokens: deadlines 1.0, 1.1, 1.2
    w = _workload((0.0, 10, 3, 1.0, 0.1), (0.0, 10, 3, 1.0, 0.1), (0.0, 10, 3, 1.0, 0.1))
    log = _log(w, {0: [0.5, 1.05, 1.2], 1: [0.9, 1.15, 1.2], 2: [0.2, 0.3]})
    result = outcome(log)
    assert result.attained.tolist() == [True, False, False]
    assert result.completed.tolist() == [True, True, False]
    assert result.ttft_attained.tolist() == [True, True, True]
    # max gaps: 0.55 > 0.1; 0.25 > 0.1; unfinished
    assert result.tbt_attained.tolist() == [False, False, False]


def test_slack_banked_by_an_early_first_token_counts() -> None:
    # eq. 1 lets an early token bank slack: gap 0.15 > TBT 0.1 yet every deadline met
    w = _workload((0.0, 10, 2, 1.0, 0.1))
    log = _log(w, {0: [0.5, 0.65]})
    result = outcome(log)
    assert result.attained.tolist() == [True]
    assert result.tbt_attained.tolist() == [False]


def test_summary_by_hand() -> None:
    w = _workload((0.0, 10, 2, 1.0, 0.1), (1.0, 10, 1, 1.0, 0.1))
    log = _log(w, {0: [0.5, 0.6], 1: [3.0]})
    m = summarize(log, end=3.0, iterations=3, predictor_errors=(0.3, -0.1, 2))
    assert m.requests == 2
    assert m.completed == 2
    assert m.attainment == 0.5
    assert m.ttft_attainment == 0.5
    assert m.ttft_p50 == 0.5
    assert m.ttft_p99 == 2.0
    assert m.tbt_p50 == pytest.approx(0.1)
    assert m.output_tokens == 3
    assert m.token_throughput == pytest.approx(1.0)
    assert m.request_throughput == pytest.approx(2 / 3)
    assert m.predictor_mae == pytest.approx(0.15)
    assert m.predictor_bias == pytest.approx(-0.05)
    # TTFT 0.5 and 2.0; E2E 0.6 and 2.0; TPOT only of the two-token request, (0.6 − 0.5)/1
    assert attrs.astuple(m.stats("ttft")) == (1.25, 0.5, 0.75, 2.0, 2.0)
    assert attrs.astuple(m.stats("e2e")) == pytest.approx((1.3, 0.6, 0.7, 2.0, 2.0))
    assert attrs.astuple(m.stats("tpot")) == pytest.approx((0.1, 0.1, 0.0, 0.1, 0.1))
    assert attrs.astuple(m.stats("tbt")) == pytest.approx((0.1, 0.1, 0.0, 0.1, 0.1))
    assert m.goodput == pytest.approx(1 / 3)


@given(
    st.lists(st.floats(0.0, 1e4), max_size=30),
    st.lists(st.tuples(st.floats(0.0, 1e4), st.integers(0, 5)), max_size=30),
)
def test_gap_stats_equal_the_stats_of_every_gap_written_out(
    plain: list[float], runs: list[tuple[float, int]]
) -> None:
    values = np.array([v for v, _ in runs], dtype=np.float64)
    weights = np.array([w for _, w in runs], dtype=np.int64)
    every = np.array(plain + [v for v, w in runs for _ in range(w)], dtype=np.float64)
    found = _gap_stats(np.array(plain, dtype=np.float64), values, weights)
    expected = Stats.of(every)
    for name in ("mean", "median", "std", "p90", "p99"):
        got, want = getattr(found, name), getattr(expected, name)
        assert (math.isnan(got) and math.isnan(want)) or got == pytest.approx(want, abs=1e-9)


def test_stats_are_numpys_mean_and_population_std() -> None:
    values = np.array([0.3, 1.0, 2.5, 2.5, 9.0])
    found = Stats.of(values)
    assert found.mean == pytest.approx(float(np.mean(values)))
    assert found.std == pytest.approx(float(np.std(values)))
    assert (found.median, found.p90, found.p99) == (2.5, 9.0, 9.0)


def test_late_ttft_is_over_the_requests_whose_first_token_missed() -> None:
    """TTFT SLO 1 s: first tokens 0.5 s (on time), 3.0 s and 1.5 s (late) after arrival, one
    never (not counted: a TTFT percentile is over requests that produced a token)."""
    slo = (10, 1, 1.0, 0.1)
    w = _workload((0.0, *slo), (0.0, *slo), (0.0, *slo), (1.0, *slo))
    log = _log(w, {0: [0.5], 1: [3.0], 3: [2.5]})
    m = summarize(log, end=3.0, iterations=3)
    assert (m.late_ttft_p99, m.late_ttft_max) == (3.0, 3.0)
    assert m.ttft_attainment == 0.25
    none_late = summarize(_log(w, {0: [0.5]}), end=1.0, iterations=1)
    assert math.isnan(none_late.late_ttft_p99)
    assert math.isnan(none_late.late_ttft_max)
    again = summarize(_log(w, {0: [0.5]}), end=1.0, iterations=1)
    assert none_late == again, "no late request in either: the same metrics"
    assert hash(none_late) == hash(again)


def test_record_run_equals_recording_each_iteration() -> None:
    w = _workload((0.0, 10, 50, 1.0, 0.05), (0.2, 10, 50, 1.0, 0.02))
    both = np.array([0, 1], dtype=np.int64)
    step, run = TokenLog(w.columns()), TokenLog(w.columns())
    for log in (step, run):
        log.record(both, 0.4)
    times = np.cumsum(np.full(7, 0.03)) + 0.4
    for t in times.tolist():
        step.record(both, t)
    run.record_run(both, times)
    for field in ("generated", "max_gap", "max_lateness", "last_token"):
        assert (getattr(step, field) == getattr(run, field)).all()
    for q in (50, 90, 99):
        assert merged_percentiles(*step.gaps(), (q,)) == merged_percentiles(*run.gaps(), (q,))


@given(
    st.lists(st.floats(0.0, 1.0), max_size=40),
    st.lists(st.tuples(st.floats(0.0, 1.0), st.integers(0, 5)), max_size=40),
    st.lists(st.floats(0.0, 100.0), min_size=1, max_size=5),
)
def test_merged_percentiles_are_the_percentiles_of_the_concatenation(
    plain: list[float], weighted: list[tuple[float, int]], qs: list[float]
) -> None:
    values = np.array([v for v, _ in weighted])
    weights = np.array([w for _, w in weighted], dtype=np.int64)
    everything = np.concatenate([np.array(plain), values])
    counts = np.concatenate([np.ones(len(plain), dtype=np.int64), weights])
    expected = percentiles(everything, qs, counts)
    got = merged_percentiles(np.array(plain), values, weights, qs)
    assert got == expected or all(
        math.isnan(a) and math.isnan(b) for a, b in zip(got, expected, strict=True)
    )


@pytest.mark.parametrize(
    ("seconds", "unit"),
    [
        ([0.012, 0.3], "ms"),
        ([0.5, 1.0], "s"),
        ([59.9], "s"),
        ([61.0, 2.0], "min"),
        ([20715.302], "h"),
        ([math.nan], "ms"),
        ([math.nan, 7200.0, math.inf], "h"),
    ],
)
def test_durations_take_the_unit_of_their_largest_value(seconds: list[float], unit: str) -> None:
    """An hour-scale TTFT reads in hours, not as 20715302 ms."""
    assert duration_unit(seconds)[0] == unit


@given(
    st.lists(st.floats(0.0, 1.0), max_size=20),
    st.lists(st.tuples(st.floats(0.0, 1.0), st.integers(0, 40)), max_size=20),
)
def test_the_exact_sum_is_the_same_however_the_gaps_are_grouped(
    plain: list[float], runs: list[tuple[float, int]]
) -> None:
    """A run of k equal gaps, counted once with weight k or k times one by one: the same bits
    (stepping and the closed-form decode runs must agree)."""
    values = np.array([v for v, _ in runs], dtype=np.float64)
    weights = np.array([w for _, w in runs], dtype=np.int64)
    spelled = np.array(plain + [v for v, w in runs for _ in range(w)], dtype=np.float64)
    none = np.zeros(0, dtype=np.int64)
    grouped = exact_sum(np.array(plain, dtype=np.float64), values, weights)
    assert grouped == exact_sum(spelled, np.zeros(0), none)
    assert grouped == math.fsum(spelled.tolist())
