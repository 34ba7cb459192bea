"""The trace bound is at least the clairvoyant MILP optimum on tiny instances: the most
requests any schedule can serve on time (proofs/clairvoyant.py) never exceed it."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from proofs.clairvoyant import Instance, solve
from proofs.instances import INSTANCES
from proofs.test_clairvoyant import tiny
from slidingpolicy.bound.cost import linear_cost
from slidingpolicy.bound.trace import trace_bound
from slidingpolicy.workloads import RequestSpec, Workload

RANDOM_CASES = 6


def as_workload(instance: Instance) -> Workload:
    """The instance's jobs as a workload, in arrival order."""
    jobs = sorted(instance.jobs, key=lambda j: (j.arrival, j.id))
    return Workload(
        instance.name,
        tuple(
            RequestSpec(j.id, j.arrival, j.prompt, j.output, j.ttft, j.tbt, "sharegpt")
            for j in jobs
        ),
    )


def _check(instance: Instance) -> tuple[int, int]:
    optimum, _ = solve(instance)
    bound = trace_bound(as_workload(instance), linear_cost(instance.b0, instance.b1))
    assert optimum <= bound.served
    return optimum, bound.served


@pytest.mark.parametrize("instance", INSTANCES, ids=[i.name for i in INSTANCES])
def test_the_clairvoyant_optimum_is_within_the_trace_bound(instance: Instance) -> None:
    """4 fixed instances (proofs/instances.py)."""
    _check(instance)


@settings(max_examples=RANDOM_CASES, deadline=None)
@given(tiny())
def test_the_clairvoyant_optimum_is_within_the_trace_bound_on_random_instances(
    instance: Instance,
) -> None:
    """6 generated 3-request instances."""
    _check(instance)
