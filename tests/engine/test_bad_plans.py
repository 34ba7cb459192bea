"""A plan the engine cannot run (strict checking off) stops the run with an error naming the
policy and the allocation, before anything is executed; by default the engine checks every
plan of a policy that is not shipped with the library, and stops at the first broken one
naming the invariant."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs
import pytest

from slidingpolicy import Online, by_name, default_predictor, names
from slidingpolicy.engine import EngineError, EngineOptions, PlanViolationError, simulate
from slidingpolicy.policies.registry import shipped
from slidingpolicy.records.plan import Allocation, BatchPlan
from slidingpolicy.records.request import Request
from slidingpolicy.records.state import SchedulerState
from slidingpolicy.workloads import RequestSpec, Workload
from tests.engine.conftest import HARDWARE, hardware


@attrs.frozen(slots=True)
class Fixed:
    """Always plans the same allocations."""

    allocations: tuple[Allocation, ...]
    token_budget: int = 512
    name: str = "fixed"

    def init(self) -> None:
        return None

    def plan(self, pstate: None, state: SchedulerState) -> tuple[BatchPlan, None]:
        return BatchPlan(self.allocations, "whole", self.name, 0, 0.01), None

    def observe(self, pstate: None, state: SchedulerState, plan: BatchPlan, latency: float) -> None:
        return None

    def observe_decodes(
        self, pstate: None, decodes: Sequence[Request], latencies: Sequence[float]
    ) -> None:
        return None


WORKLOAD = Workload(
    "two",
    (
        RequestSpec("a", 0.0, 100, 5, 1.0, 0.1, "test"),
        RequestSpec("b", 0.0, 50, 5, 1.0, 0.1, "test"),
    ),
)


@pytest.mark.parametrize(
    ("allocations", "message"),
    [
        (
            (Allocation("a", 101),),
            r"allocation .*'a'.* does not fit request 'a' \(prefill left 100\)",
        ),
        ((Allocation("zz", 1),), r"allocated id 'zz' is not a live request"),
        ((Allocation("b", 10), Allocation("b", 5)), r"request 'b' is allocated twice"),
    ],
)
def test_a_plan_the_engine_cannot_run_is_named(
    allocations: tuple[Allocation, ...], message: str
) -> None:
    with pytest.raises(EngineError, match=message):
        simulate(
            Fixed(allocations), WORKLOAD, hardware(*HARDWARE[0]), 0, EngineOptions(strict=False)
        )


@pytest.mark.parametrize(
    ("allocations", "message"),
    [
        ((Allocation("a", 101),), r"invariant 2: request 'a' got 101 tokens, more than r=100"),
        ((Allocation("zz", 1),), r"invariant 1: request 'zz' is not in the state"),
        ((Allocation("a", 100), Allocation("b", 50)), r"invariant 4: 150 tokens exceed .* 100"),
    ],
)
def test_by_default_a_plan_of_a_policy_of_your_own_is_checked(
    allocations: tuple[Allocation, ...], message: str
) -> None:
    policy = Fixed(allocations, token_budget=100)
    with pytest.raises(PlanViolationError, match=r"policy 'fixed' at t=0.000000s broke " + message):
        simulate(policy, WORKLOAD, hardware(*HARDWARE[0]), 0)


@pytest.mark.parametrize("name", names())
def test_ours_run_unchecked_by_default_and_yours_checked_learning_or_not(name: str) -> None:
    ours: Any = by_name(name, default_predictor())
    assert shipped(ours)
    assert not EngineOptions().checks(ours)
    assert EngineOptions(strict=True).checks(ours)
    inner: Any = ours.inner if isinstance(ours, Online) else ours
    renamed = attrs.evolve(inner, name="mine")
    yours = [renamed, Online(renamed), Fixed(()), attrs.evolve(Fixed(()), name=name)]
    for policy in yours:
        assert not shipped(policy)
        assert EngineOptions().checks(policy)
        assert not EngineOptions(strict=False).checks(policy)
