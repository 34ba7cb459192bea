"""A plan the engine cannot run (strict checking off) stops the run with an error naming the
policy and the allocation, before anything is executed."""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import pytest

from slidingpolicy.engine import EngineError, EngineOptions, simulate
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
        simulate(Fixed(allocations), WORKLOAD, hardware(*HARDWARE[0]), 0, EngineOptions())
