"""A run with a window (a steady-state trial) judges its counted requests only, runs until
they have all finished or every counted deadline has passed, and is otherwise the same run."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slidingpolicy.engine import EngineOptions, simulate
from slidingpolicy.runs.results import dumps, outcome_rows
from slidingpolicy.runs.specs import WorkloadSpec
from slidingpolicy.workloads import Poisson, RequestSpec, Window, Workload, make_workload
from tests.engine.conftest import HARDWARE, Fcfs, hardware

RTX = hardware(*HARDWARE[0])


def _trial(n: int, rate: float, seed: int, name: str = "sharegpt") -> Workload:
    return WorkloadSpec(name, n).build(Poisson(rate), seed)


@settings(max_examples=12, deadline=None)
@given(st.integers(5, 40), st.floats(0.2, 3.0), st.integers(0, 1000))
def test_a_window_of_every_request_is_the_run_without_one(n: int, rate: float, seed: int) -> None:
    finite = make_workload("mixed-v1", n, Poisson(rate), seed)
    every = Workload(finite.name, finite.requests, Window(0, n, 0.0, 1e9))
    runs = [simulate(Fcfs(), w, RTX, seed, EngineOptions(strict=True)) for w in (finite, every)]
    assert runs[0].metrics == runs[1].metrics
    assert runs[0].end == runs[1].end


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_closed_form_equals_stepping_with_a_window(seed: int) -> None:
    trial = _trial(25, 1.5, seed)

    def document(closed_form: bool) -> str:
        out = simulate(
            Fcfs(), trial, RTX, seed, EngineOptions(strict=True, closed_form=closed_form)
        )
        ids = [r.id for r in trial.requests]
        return dumps({"metrics": out.metrics.to_dict(), "requests": outcome_rows(ids, out.outcome)})

    assert document(True) == document(False)


@pytest.mark.parametrize("seed", [0, 3])
def test_the_metrics_judge_the_counted_requests_alone(seed: int) -> None:
    trial = _trial(30, 1.2, seed)
    window = trial.window
    assert window is not None
    out = simulate(Fcfs(), trial, RTX, seed, EngineOptions(strict=True))
    counted = slice(window.first, window.first + window.count)
    assert out.metrics.requests == 30
    assert out.metrics.attainment == pytest.approx(out.outcome.attained[counted].mean())
    assert out.metrics.completed == int(out.outcome.completed[counted].sum())
    produced = out.outcome.ttft[counted]
    assert out.metrics.ttft_p99 <= float(np.nanmax(produced))
    assert out.metrics.output_tokens == int(out.outcome.generated[counted].sum())


def test_the_run_ends_when_the_last_counted_request_finishes() -> None:
    trial = _trial(20, 1.0, 5)
    window = trial.window
    assert window is not None
    out = simulate(Fcfs(), trial, RTX, 5, EngineOptions(strict=True))
    counted = slice(window.first, window.first + window.count)
    assert out.outcome.completed[counted].all()
    assert out.end == float(np.nanmax(out.outcome.finish[counted]))
    assert out.metrics.drain == 0.0
    assert not out.outcome.completed[window.first + window.count :].all()


def _request(rid: str, arrival: float, ttft: float, prompt: int = 200) -> RequestSpec:
    return RequestSpec(rid, arrival, prompt, 4, ttft, 0.5, "sharegpt")


def test_misses_outside_the_window_do_not_stop_a_trial() -> None:
    """The warm-up's requests all miss (TTFT 1 ms); the counted ones meet theirs: a miss
    budget of 0 stops the run only on a counted miss."""
    warm = tuple(_request(f"w{i}", 0.1 * i, 0.001) for i in range(10))
    counted = tuple(_request(f"r{i}", 5.0 + i, 30.0) for i in range(5))
    trial = Workload("w", warm + counted, Window(10, 5, 0.9, 60.0))
    out = simulate(Fcfs(), trial, RTX, 0, EngineOptions(miss_budget=0))
    assert not out.stopped_early
    assert out.metrics.attainment == 1.0
    assert not out.outcome.attained[:10].any()


def test_a_counted_miss_over_the_budget_stops_the_trial() -> None:
    warm = tuple(_request(f"w{i}", 0.1 * i, 30.0) for i in range(3))
    counted = tuple(_request(f"r{i}", 1.0 + 0.01 * i, 0.001, 4000) for i in range(30))
    trial = Workload("w", warm + counted, Window(3, 30, 0.2, 60.0))
    out = simulate(Fcfs(), trial, RTX, 0, EngineOptions(miss_budget=0))
    assert out.stopped_early
    assert out.metrics.completed < 30


def test_a_trial_stops_at_its_horizon_with_the_waiting_counted_at_their_wait() -> None:
    """A counted request that cannot start before the horizon has missed: the run stops there,
    and its TTFT counts as the wait so far (a lower bound), `waiting` saying how many."""
    blocker = RequestSpec("w0", 0.0, 60_000, 3000, 1e3, 10.0, "sharegpt")
    counted = (_request("r0", 0.5, 0.2),)
    trial = Workload("w", (blocker, *counted), Window(1, 1, 0.5, 0.5 + 0.2 + 3 * 0.5))
    out = simulate(Fcfs(token_budget=2048), trial, RTX, 0, EngineOptions())
    window = trial.window
    assert window is not None
    assert window.horizon < out.end < window.horizon + 1.0
    assert out.metrics.waiting == 1
    assert out.metrics.attainment == 0.0
    assert out.metrics.ttft_p99 == pytest.approx(out.end - 0.5)
    assert math.isnan(out.outcome.ttft[1])


def test_a_finite_trial_of_a_burst_of_requests_is_mostly_drain() -> None:
    """40 short requests arriving within a fifth of a second: most of the trial is spent
    serving them with nothing arriving behind."""
    burst = make_workload("cpu-mixed", 40, Poisson(200.0), 2)
    out = simulate(Fcfs(token_budget=2048), burst, RTX, 2, EngineOptions())
    assert out.metrics.attainment > 0.0
    assert out.metrics.drain_share > 0.9
