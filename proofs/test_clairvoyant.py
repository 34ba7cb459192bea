"""The clairvoyant MILP bounds every registered policy on tiny instances (and its schedule
is a real one)."""

from __future__ import annotations

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from proofs.clairvoyant import Instance, Job, instance_of, served, solve
from proofs.instances import B0, B1, INSTANCES
from proofs.stepping import run
from slidingpolicy.policies import by_name, names

RANDOM_CASES = 6


def _check(instance: Instance, grow: bool = False) -> dict[str, int]:
    """Each policy's run, cut to the requests it served on time, is a feasible MILP point
    within K iterations (with `grow`, K is first raised to the most any run needs); the
    MILP's own schedule replays to its optimum; so each policy's count ≤ the optimum."""
    cuts = {}
    for name in names():
        ran = run(by_name(name, instance.predictor()), instance)
        cuts[name] = ran.restricted(served(instance, ran))
    if grow:
        most = max(len(cut.batches) for cut in cuts.values())
        instance = attrs.evolve(instance, iterations=max(instance.iterations, most))
    optimum, schedule = solve(instance)
    assert len(served(instance, schedule)) == optimum
    counts = {}
    for name, cut in cuts.items():
        on_time = served(instance, cut)
        assert len(cut.batches) <= instance.iterations, (name, len(cut.batches))
        fixed, _ = solve(instance, cut)
        assert fixed == len(on_time)
        assert len(on_time) <= optimum
        counts[name] = len(on_time)
    return counts


@pytest.mark.slow
@pytest.mark.parametrize("instance", INSTANCES, ids=[i.name for i in INSTANCES])
def test_clairvoyant_bounds_every_policy(instance: Instance) -> None:
    """4 fixed instances (proofs/instances.py) × every registered policy."""
    _check(instance)


@st.composite
def tiny(draw: st.DrawFn) -> Instance:
    """3 requests arriving within 50 ms, prompts up to 1500, 1–3 output tokens, K = 8."""
    jobs = [
        Job(
            f"r{i}",
            draw(st.sampled_from([0.0, 0.01, 0.02, 0.05])),
            draw(st.integers(1, 1500)),
            draw(st.integers(1, 3)),
            draw(st.sampled_from([0.05, 0.1, 0.2, 0.4])),
            draw(st.sampled_from([0.02, 0.05, 0.1])),
        )
        for i in range(3)
    ]
    return instance_of("random", jobs, B0, B1, 8)


@pytest.mark.slow
@settings(max_examples=RANDOM_CASES, deadline=None)
@given(tiny())
def test_clairvoyant_bounds_every_policy_on_random_instances(instance: Instance) -> None:
    """6 generated 3-request instances × every registered policy (K ≥ 8, raised to the
    most iterations any policy's on-time part needs)."""
    _check(instance, grow=True)
