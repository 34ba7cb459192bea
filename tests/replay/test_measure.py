"""What a client measured, judged: the engine's own metrics on the measured token times equal
eq. 1 applied by hand to the same times, failures are misses and are tallied."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from slidingpolicy.errors import InvalidRecordError
from slidingpolicy.metrics import percentile
from slidingpolicy.replay.client import GAVE_UP
from slidingpolicy.replay.measure import Measured, failures, judge, run_end, send_lag
from slidingpolicy.workloads import RequestSpec, Workload

FAILURES = ("timeout", "http 500", GAVE_UP)


@st.composite
def measured_runs(draw: st.DrawFn) -> tuple[Workload, list[Measured]]:
    """A workload of 1–12 requests and, for each, token times after its arrival: all of its
    tokens, some of them (a failure, perhaps a notice that the policy gave it up), or none."""
    n = draw(st.integers(1, 12))
    arrivals = sorted(draw(st.lists(st.floats(0, 5), min_size=n, max_size=n)))
    requests, measured = [], []
    for i, arrival in enumerate(arrivals):
        output = draw(st.integers(1, 6))
        ttft = draw(st.floats(0.05, 2.0))
        tbt = draw(st.floats(0.01, 0.5))
        requests.append(RequestSpec(f"r{i}", arrival, 10, output, ttft, tbt, "chat"))
        got = draw(st.integers(0, output))
        gaps = draw(st.lists(st.floats(0, 1.5), min_size=got, max_size=got))
        times = tuple(arrival + float(t) for t in np.cumsum(gaps))
        failure = None if got == output else draw(st.sampled_from(FAILURES))
        notice = None
        if failure == GAVE_UP:
            notice = max((arrival, *times)) + draw(st.floats(0, 3))
        measured.append(Measured(arrival, times, failure, notice))
    return Workload("w", tuple(requests)), measured


def on_time(request: RequestSpec, tokens: tuple[float, ...]) -> bool:
    """Eq. 1 by hand: all tokens came, token k by a + L_ttft + (k − 1)·L_tbt."""
    return len(tokens) == request.output_tokens and all(
        t <= request.arrival + request.ttft_slo + k * request.tbt_slo for k, t in enumerate(tokens)
    )


@given(measured_runs())
def test_attainment_is_eq_1_applied_to_the_measured_token_times(
    run: tuple[Workload, list[Measured]],
) -> None:
    workload, measured = run
    metrics, outcome = judge(workload, measured)
    expected = [on_time(r, m.tokens) for r, m in zip(workload.requests, measured, strict=True)]
    assert outcome.attained.tolist() == expected
    assert metrics.attainment == sum(expected) / len(expected)


@given(measured_runs())
def test_ttft_tbt_and_throughput_are_those_of_the_measured_times(
    run: tuple[Workload, list[Measured]],
) -> None:
    workload, measured = run
    metrics, outcome = judge(workload, measured)
    ttfts = [
        m.tokens[0] - r.arrival
        for r, m in zip(workload.requests, measured, strict=True)
        if m.tokens
    ]
    gaps = [b - a for m in measured for a, b in itertools.pairwise(m.tokens)]
    for q, value in ((50, metrics.ttft_p50), (99, metrics.ttft_p99)):
        assert value == percentile(np.array(ttfts), q) or (math.isnan(value) and not ttfts)
    for q, value in ((50, metrics.tbt_p50), (99, metrics.tbt_p99)):
        assert value == percentile(np.array(gaps), q) or (math.isnan(value) and not gaps)
    complete = [
        len(m.tokens) == r.output_tokens for r, m in zip(workload.requests, measured, strict=True)
    ]
    assert outcome.completed.tolist() == complete
    assert metrics.output_tokens == sum(len(m.tokens) for m in measured)
    assert run_end(workload, measured) >= workload.requests[-1].arrival


@given(measured_runs())
def test_every_failed_request_is_counted_and_missed(run: tuple[Workload, list[Measured]]) -> None:
    workload, measured = run
    _, outcome = judge(workload, measured)
    tally = failures(workload, measured)
    assert sum(tally.values()) == sum(m.failure is not None for m in measured)
    for missed, m in zip(outcome.attained.tolist(), measured, strict=True):
        if m.failure is not None:
            assert not missed


@given(measured_runs())
def test_a_notice_is_counted_given_up_and_ends_the_wait_as_the_engine_counts_it(
    run: tuple[Workload, list[Measured]],
) -> None:
    workload, measured = run
    metrics, outcome = judge(workload, measured)
    assert metrics.given_up == sum(m.notice is not None for m in measured)
    waits = []
    for r, m, waited in zip(workload.requests, measured, outcome.given_up.tolist(), strict=True):
        if m.notice is None:
            assert math.isnan(waited)
        else:
            assert waited == m.notice - r.arrival
        answered = m.tokens[0] if m.tokens else m.notice
        if answered is not None:
            waits.append(answered - r.arrival)
    expected = percentile(np.array(waits), 99)
    assert metrics.ttft_or_notice_p99 == expected or (math.isnan(expected) and not waits)


def test_send_lag_is_the_latest_send_after_its_arrival() -> None:
    workload = Workload(
        "w", tuple(RequestSpec(f"r{i}", float(i), 4, 1, 1.0, 0.1, "chat") for i in range(3))
    )
    measured = [Measured(0.01, (0.5,)), Measured(1.25, (1.5,)), Measured(2.0, (2.5,))]
    assert send_lag(workload, measured) == pytest.approx(0.25)


def test_times_out_of_order_are_refused() -> None:
    with pytest.raises(InvalidRecordError, match="tokens"):
        Measured(1.0, (0.5,))
    with pytest.raises(InvalidRecordError, match="tokens"):
        Measured(0.0, (0.5, math.nan))
    with pytest.raises(InvalidRecordError, match="notice"):
        Measured(0.0, (0.5,), GAVE_UP, 0.25)


def test_a_count_that_does_not_match_the_workload_is_refused() -> None:
    workload = Workload("w", (RequestSpec("r0", 0.0, 4, 1, 1.0, 0.1, "chat"),))
    with pytest.raises(InvalidRecordError, match="measured"):
        judge(workload, [])
