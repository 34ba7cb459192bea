"""No policy serves more requests on time than the trace bound allows, on any built-in
hardware model; no policy's capacity exceeds the bound's capacity on the same trials."""

from __future__ import annotations

import itertools
import math

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slidingpolicy.bound.limits import trial_bound
from slidingpolicy.bound.trace import attainable, trace_bound
from slidingpolicy.engine.run_types import EngineOptions
from slidingpolicy.engine.simulator import simulate
from slidingpolicy.policies import by_name, names
from slidingpolicy.runs.capacity_search import capacity_search
from slidingpolicy.runs.specs import HardwareSpec, RunSpec, WorkloadSpec
from slidingpolicy.workloads import Poisson, RequestSpec, Workload, make_workload, workload_names
from tests.bound.conftest import (
    HARDWARE,
    RATE_SCALE,
    base_gpu,
    cost,
    hardware,
    predictor,
    predictor_path,
)

CAPACITY_PRECISION = 0.1
"""The capacity searches of these tests stop at 10% (both sides use the same search)."""


@st.composite
def workloads(draw: st.DrawFn, spec: HardwareSpec) -> Workload:
    """8–30 requests of a named workload at a rate around the hardware's capacity (0.3–4×),
    SLOs scaled 0.3–3× (per data set, or QoServe's tiers)."""
    rate = draw(st.floats(0.3, 4.0)) * RATE_SCALE[base_gpu(spec)]
    return make_workload(
        draw(st.sampled_from(workload_names())),
        draw(st.integers(8, 30)),
        Poisson(rate),
        draw(st.integers(0, 10_000)),
        draw(st.floats(0.3, 3.0)),
        draw(st.booleans()),
    )


def _served(policy: str, spec: HardwareSpec, workload: Workload) -> int:
    run = simulate(
        by_name(policy, predictor(spec)),
        workload,
        hardware(spec),
        seed=0,
        options=EngineOptions(strict=True),
    )
    return round(run.metrics.attainment * len(workload))


@pytest.mark.parametrize("spec", HARDWARE, ids=lambda s: s.gpu)
@settings(max_examples=3, deadline=None)
@given(data=st.data())
def test_no_policy_serves_more_than_the_trace_bound(
    spec: HardwareSpec, data: st.DataObject
) -> None:
    """Every registered policy, 3 random workloads per hardware model (noise-free)."""
    workload = data.draw(workloads(spec))
    bound = trace_bound(workload, cost(spec))
    for policy in names():
        assert _served(policy, spec, workload) <= bound.served, policy


@pytest.mark.slow
@pytest.mark.parametrize("spec", HARDWARE, ids=lambda s: s.gpu)
def test_no_policy_capacity_exceeds_the_trace_bound_capacity(spec: HardwareSpec) -> None:
    """The capacity search of every policy against the same search on the bound (40 requests
    with SLOs halved, one seed): the bound passes at every rate a policy passes, so it ends no
    lower."""
    base = RunSpec(
        "sarathi",
        hardware=spec,
        workload=WorkloadSpec("mixed-v1", requests=40, slo_scale=0.5),
        seed=3,
        predictor=str(predictor_path(spec)),
    )
    start = RATE_SCALE[base_gpu(spec)]
    limit = trial_bound(base, start=start, precision=CAPACITY_PRECISION)
    for policy in names():
        found = capacity_search(
            base.with_policy(policy), start=start, precision=CAPACITY_PRECISION, workers=1
        )
        assert found.capacity <= limit.capacity, policy


@settings(max_examples=20, deadline=None)
@given(workloads(HARDWARE[0]))
def test_more_misses_never_make_a_trace_infeasible(workload: Workload) -> None:
    model = cost(HARDWARE[0])
    found = trace_bound(workload, model)
    misses = len(workload) - found.served
    assert attainable(workload, model, misses)
    if misses > 0:
        assert not attainable(workload, model, misses - 1)
        assert sum(k for _, _, k in found.intervals) >= misses


@settings(max_examples=20, deadline=None)
@given(workloads(HARDWARE[0]))
def test_the_forcing_intervals_are_disjoint(workload: Workload) -> None:
    """Requests of disjoint intervals are different requests, so their misses add up."""
    spans = trace_bound(workload, cost(HARDWARE[0])).intervals
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans))


def test_a_lone_request_with_room_is_served() -> None:
    lone = Workload("lone", (RequestSpec("r0", 0.0, 500, 20, 5.0, 0.5, "sharegpt"),))
    assert trace_bound(lone, cost(HARDWARE[0])).served == 1


def test_a_request_whose_prompt_cannot_fit_its_ttft_is_not_served() -> None:
    """8000 prompt tokens cannot run in 10 ms on an RTX 3090 (≈ 0.15 ms a token)."""
    hopeless = Workload("hopeless", (RequestSpec("r0", 0.0, 8000, 2, 0.01, 0.1, "sharegpt"),))
    found = trace_bound(hopeless, cost(HARDWARE[0]))
    assert found.served == 0
    assert found.intervals


def test_the_trace_bound_capacity_brackets_a_passing_and_a_failing_rate() -> None:
    base = RunSpec("sarathi", workload=WorkloadSpec("sharegpt", requests=30), seed=1)
    found = trial_bound(base, start=2.0, precision=CAPACITY_PRECISION)
    misses = 30 - math.ceil(0.99 * 30)
    for rate, allowed in ((found.capacity, True), (found.failing, False)):
        spec = attrs.evolve(base.with_rate(rate))
        assert (
            attainable(
                spec.workload.build(spec.arrivals, spec.seed).measured(), cost(HARDWARE[0]), misses
            )
            == allowed
        )
