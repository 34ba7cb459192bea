"""Fault containment: a raising policy or an invalid plan never stops vLLM."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import pytest
from slidingpolicy import Allocation, BatchPlan, Request, SchedulerState
from vllm.v1.request import RequestStatus

from slidingpolicy_vllm import AsyncSlidingScheduler, SlidingScheduler
from slidingpolicy_vllm.testing import make_scheduler
from tests.driver import Job, drive

CLASSES = (SlidingScheduler, AsyncSlidingScheduler)
WORKLOAD = [Job(prompt=40 + 30 * i, output=6, arrive=2 * i) for i in range(6)]


@attrs.frozen
class Faulty:
    """The configured policy, broken every `every`-th plan by `breaks`."""

    inner: Any
    every: int
    breaks: str
    calls: list[int] = attrs.field(factory=list)

    @property
    def name(self) -> str:
        return str(self.inner.name)

    @property
    def token_budget(self) -> int:
        return int(self.inner.token_budget)

    def init(self) -> Any:
        return self.inner.init()

    def plan(self, pstate: Any, state: SchedulerState) -> tuple[BatchPlan, Any]:
        self.calls.append(1)
        plan, pstate = self.inner.plan(pstate, state)
        if len(self.calls) % self.every:
            return plan, pstate
        if self.breaks == "raise":
            raise ZeroDivisionError("policy bug")
        doubled = tuple(Allocation(a.request_id, a.tokens + 1) for a in plan.allocations)
        return attrs.evolve(plan, allocations=doubled), pstate

    def observe(self, pstate: Any, state: SchedulerState, plan: BatchPlan, latency: float) -> Any:
        return self.inner.observe(pstate, state, plan, latency)

    def observe_decodes(
        self, pstate: Any, decodes: Sequence[Request], latencies: Sequence[float]
    ) -> Any:
        return self.inner.observe_decodes(pstate, decodes, latencies)


def _broken(cls: type[SlidingScheduler], model_dir: Path, breaks: str) -> SlidingScheduler:
    scheduler = make_scheduler(cls, model_dir, num_blocks=64)
    assert isinstance(scheduler, SlidingScheduler)
    scheduler.sliding_policy = Faulty(scheduler.sliding_policy, 3, breaks)
    return scheduler


@pytest.mark.parametrize("cls", CLASSES)
@pytest.mark.parametrize(
    ("breaks", "kind"),
    [("raise", "policy raised ZeroDivisionError"), ("invalid", "plan breaks invariant 2")],
)
def test_a_failing_policy_falls_back_to_vllm_and_loses_nothing(
    model_dir: Path,
    cls: type[SlidingScheduler],
    breaks: str,
    kind: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    scheduler = _broken(cls, model_dir, breaks)
    fallbacks = []

    def note(s: SlidingScheduler, before: object, output: object) -> None:
        assert s.sliding_decision is not None
        if s.sliding_decision.fallback is not None:
            fallbacks.append(s.sliding_decision.fallback)

    with caplog.at_level(logging.WARNING, logger="slidingpolicy_vllm"):
        requests = drive(scheduler, WORKLOAD, asynchronous=cls is AsyncSlidingScheduler, check=note)
    assert all(r.status == RequestStatus.FINISHED_LENGTH_CAPPED for r in requests.values())
    assert all(r.num_output_tokens == 6 for r in requests.values())
    assert set(fallbacks) == {kind}
    assert scheduler.sliding_faults == {kind: len(fallbacks)}
    assert len(fallbacks) > 1
    logged = [r for r in caplog.records if kind in r.getMessage()]
    assert len(logged) == 1, "logged once per kind"
    assert scheduler.kv_cache_manager.block_pool.get_num_free_blocks() == 64
