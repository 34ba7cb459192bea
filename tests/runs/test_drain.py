"""A trial too short to stand for the long run says so, with the -n that would do."""

from __future__ import annotations

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from slidingpolicy.engine import EngineOptions, simulate
from slidingpolicy.metrics import Metrics
from slidingpolicy.runs.drain import (
    DRAIN_SHARE,
    drain_note,
    enough_requests,
    too_short,
    worst_note,
)
from slidingpolicy.workloads import Poisson, make_workload
from tests.engine.conftest import HARDWARE, Fcfs, hardware


def _metrics(n: int, rate: float) -> Metrics:
    workload = make_workload("cpu-mixed", n, Poisson(rate), 2)
    out = simulate(Fcfs(token_budget=2048), workload, hardware(*HARDWARE[0]), 2, EngineOptions())
    return out.metrics


def test_a_burst_is_too_short_and_the_n_it_names_would_do() -> None:
    metrics = _metrics(40, 200.0)
    assert too_short(metrics)
    wanted = enough_requests(metrics)
    note = drain_note("sarathi at 200 req/s", metrics)
    assert note is not None
    assert note.startswith("sarathi at 200 req/s: ")
    assert f"-n {wanted} would do" in note
    assert wanted > 40


def test_a_trial_with_little_drain_is_not_too_short() -> None:
    metrics = _metrics(40, 2.0)
    assert not too_short(metrics)
    assert drain_note("x", metrics) is None


@given(st.floats(0.5, 100.0), st.floats(0.01, 100.0), st.integers(1, 100_000))
def test_the_n_named_makes_the_drain_at_most_its_share(rest: float, drain: float, n: int) -> None:
    """At the same rate the drain lasts about as long whatever the trial's size, and the rest
    of the span grows with it: n' requests make the drain at most `DRAIN_SHARE`."""
    metrics = attrs.evolve(_METRICS, requests=n, span=rest + drain, drain=drain)
    wanted = enough_requests(metrics)
    longer = rest * wanted / n
    assert drain / (longer + drain) <= DRAIN_SHARE + 1e-9
    assert wanted <= 1.1 * n * drain * (1 - DRAIN_SHARE) / (DRAIN_SHARE * rest) + 1


_METRICS = _metrics(10, 2.0)


@pytest.mark.parametrize("share", [0.0, DRAIN_SHARE])
def test_a_drain_of_at_most_the_share_is_not_too_short(share: float) -> None:
    metrics = attrs.evolve(_METRICS, span=10.0, drain=10.0 * share)
    assert not too_short(metrics)


def test_several_runs_name_how_many_are_too_short_and_the_worst() -> None:
    short, shorter, fine = _metrics(40, 50.0), _metrics(40, 200.0), _metrics(40, 2.0)
    note = worst_note([("a", short), ("b", shorter), ("c", fine)])
    assert note is not None
    assert note.startswith("2 of 3 runs too short; the longest drain: b: ")
    assert worst_note([("c", fine)]) is None
