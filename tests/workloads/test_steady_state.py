"""Steady-state trials: the finite trial's requests, after a warm-up of `WARMUP_SLOS` shortest
TTFT SLOs and with arrivals going on until every counted deadline has passed."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slidingpolicy.errors import InvalidRecordError
from slidingpolicy.runs.specs import WorkloadSpec
from slidingpolicy.workloads import (
    WARMUP_SLOS,
    Burst,
    Poisson,
    TraceTimes,
    Window,
    Workload,
    make_workload,
    steady_state,
    workload_names,
)
from slidingpolicy.workloads.steady_state import horizon, trial_text, trials_text

names = st.sampled_from(workload_names())
rates = st.floats(0.05, 400.0)


def _trial(name: str, n: int, rate: float, seed: int, scale: float = 1.0) -> Workload:
    return WorkloadSpec(name, n, slo_scale=scale).build(Poisson(rate), seed)


@settings(max_examples=30, deadline=None)
@given(names, st.integers(1, 60), rates, st.integers(0, 2**31), st.sampled_from([0.5, 1.0, 3.0]))
def test_the_counted_requests_are_the_finite_trials_after_the_warm_up(
    name: str, n: int, rate: float, seed: int, scale: float
) -> None:
    finite = WorkloadSpec(name, n, slo_scale=scale, whole=True).build(Poisson(rate), seed)
    trial = _trial(name, n, rate, seed, scale)
    window = trial.window
    assert window is not None
    assert window.count == n
    assert finite.window is None
    counted = trial.requests[window.first : window.first + n]
    assert [r.id for r in counted] == [r.id for r in finite.requests]
    for mine, theirs in zip(counted, finite.requests, strict=True):
        assert (mine.prompt_tokens, mine.output_tokens, mine.source) == (
            theirs.prompt_tokens,
            theirs.output_tokens,
            theirs.source,
        )
        assert (mine.ttft_slo, mine.tbt_slo) == (theirs.ttft_slo, theirs.tbt_slo)
        assert mine.arrival == pytest.approx(theirs.arrival + window.warmup, rel=1e-12)


@settings(max_examples=30, deadline=None)
@given(names, st.integers(1, 40), rates, st.integers(0, 2**31))
def test_the_warm_up_lasts_warmup_slos_shortest_ttfts_at_the_rate(
    name: str, n: int, rate: float, seed: int
) -> None:
    trial = _trial(name, n, rate, seed)
    window = trial.window
    assert window is not None
    counted = trial.requests[window.first : window.first + n]
    shortest = min(r.ttft_slo for r in counted)
    assert window.first == max(1, math.ceil(rate * WARMUP_SLOS * shortest))
    assert all(r.id.startswith("w") for r in trial.requests[: window.first])
    assert window.warmup == trial.requests[window.first - 1].arrival


@settings(max_examples=30, deadline=None)
@given(names, st.integers(1, 40), rates, st.integers(0, 2**31))
def test_arrivals_go_on_to_the_last_counted_deadline_and_no_further(
    name: str, n: int, rate: float, seed: int
) -> None:
    trial = _trial(name, n, rate, seed)
    window = trial.window
    assert window is not None
    c = trial.measured().columns()
    assert window.horizon == pytest.approx(
        float((c.arrival + c.ttft + (c.output - 1) * c.tbt).max())
    )
    tail = trial.requests[window.first + n :]
    assert all(r.id.startswith("t") for r in tail)
    assert all(r.arrival <= window.horizon for r in tail)
    assert len({r.id for r in trial.requests}) == len(trial)


def test_the_tail_is_drawn_until_it_passes_the_horizon() -> None:
    """However short the first draw, the tail is drawn again, longer, until it reaches the
    horizon: a trial never runs dry before its last counted deadline."""
    counted = make_workload("sharegpt", 5, Poisson(2.0), 1)
    drawn: list[int] = []

    def draw(k: int, stream: int) -> Workload:
        drawn.append(k)
        return make_workload("sharegpt", k, Poisson(2.0), 100 + stream)

    trial = steady_state(counted, 2.0, draw)
    assert trial.window is not None
    start = trial.window.warmup + counted.requests[-1].arrival
    last_tail = make_workload("sharegpt", drawn[-1], Poisson(2.0), 102).requests[-1].arrival
    assert start + last_tail >= trial.window.horizon
    assert len(trial) > trial.window.first + 5


@settings(max_examples=15, deadline=None)
@given(names, st.integers(1, 30), rates, rates, st.integers(0, 2**31))
def test_the_counted_lengths_do_not_depend_on_the_rate(
    name: str, n: int, rate: float, other: float, seed: int
) -> None:
    def lengths(r: float) -> list[tuple[int, int]]:
        return [
            (q.prompt_tokens, q.output_tokens) for q in _trial(name, n, r, seed).measured().requests
        ]

    assert lengths(rate) == lengths(other)


def test_a_trial_is_the_same_from_the_same_seed_and_another_from_another() -> None:
    assert _trial("mixed-v1", 50, 3.0, 7) == _trial("mixed-v1", 50, 3.0, 7)
    assert _trial("mixed-v1", 50, 3.0, 7) != _trial("mixed-v1", 50, 3.0, 8)


@pytest.mark.parametrize(
    "arrivals", [Burst(1.0, 5.0, 10.0, 5.0), None], ids=["burst", "trace times"]
)
def test_a_burst_or_a_traces_own_times_is_a_finite_trial(
    arrivals: Burst | None, tmp_path: Path
) -> None:
    if arrivals is None:
        trace = tmp_path / "t.csv"
        trace.write_text(
            "num_prefill_tokens,num_decode_tokens,arrived_at\n10,5,0\n20,5,1\n30,5,3\n"
        )
        spec = WorkloadSpec(trace=str(trace), requests=3)
    else:
        spec = WorkloadSpec("sharegpt", 20)
    assert spec.build(arrivals, 0).window is None


def test_a_trace_rescaled_to_a_rate_draws_its_warm_up_and_tail_from_its_own_lengths(
    tmp_path: Path,
) -> None:
    trace = tmp_path / "t.csv"
    rows = [f"{10 * (i + 1)},{i + 2},{i}" for i in range(8)]
    trace.write_text("num_prefill_tokens,num_decode_tokens,arrived_at\n" + "\n".join(rows) + "\n")
    trial = WorkloadSpec(trace=str(trace), requests=8).build(TraceTimes(2.0), 3)
    assert trial.window is not None
    assert trial.window.count == 8
    lengths = {(10 * (i + 1), i + 2) for i in range(8)}
    assert {(r.prompt_tokens, r.output_tokens) for r in trial.requests} <= lengths
    assert len(trial) > 8


def test_whole_makes_the_finite_trial() -> None:
    finite = WorkloadSpec("mixed-v1", 30, whole=True).build(Poisson(2.0), 4)
    assert finite == make_workload("mixed-v1", 30, Poisson(2.0), 4)
    assert trial_text(finite).startswith("a finite trial")
    assert trial_text(_trial("mixed-v1", 30, 2.0, 4)).startswith("a steady-state trial")
    assert trials_text(finite).startswith("finite trials: every one of their 30")
    assert trials_text(_trial("mixed-v1", 30, 2.0, 4)).startswith(
        "steady-state trials: 30 requests counted in each, after 120 s of warm-up"
    )


def test_the_measured_requests_of_a_finite_trial_are_all_of_them() -> None:
    finite = make_workload("arxiv", 12, Poisson(1.0), 0)
    assert finite.measured() is finite
    assert finite.counted == range(12)
    assert horizon(finite) == pytest.approx(
        max(r.arrival + r.ttft_slo + (r.output_tokens - 1) * r.tbt_slo for r in finite.requests)
    )


@pytest.mark.parametrize(
    ("window", "message"),
    [
        (Window(0, 4, 0.0, 1.0), "window counts requests 0 to 3, beyond its 3 requests"),
        (Window(3, 1, 0.0, 1.0), "window counts requests 3 to 3, beyond its 3 requests"),
    ],
)
def test_a_window_beyond_the_requests_is_refused(window: Window, message: str) -> None:
    requests = make_workload("sharegpt", 3, Poisson(1.0), 0).requests
    with pytest.raises(InvalidRecordError, match=message):
        Workload("w", requests, window)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ((-1, 1, 0.0, 1.0), "window: first=-1 must be"),
        ((0, 0, 0.0, 1.0), "window: count=0 must be"),
        ((0, 1, math.nan, 1.0), "window: warmup"),
        ((0, 1, 0.0, -2.0), "window: horizon"),
    ],
)
def test_a_malformed_window_is_refused_naming_its_field(
    fields: tuple[int, int, float, float], message: str
) -> None:
    with pytest.raises(InvalidRecordError, match=message):
        Window(*fields)


def test_the_warm_up_scales_with_the_slos() -> None:
    tight = _trial("sharegpt", 10, 5.0, 0, scale=0.5).window
    loose = _trial("sharegpt", 10, 5.0, 0, scale=2.0).window
    assert tight is not None
    assert loose is not None
    assert np.isclose(loose.first / tight.first, 4.0, rtol=0.01)
