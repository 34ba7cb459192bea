"""Fault containment: a raising policy or an invalid plan never stops the engine: the engine's
FIFO schedules that step, the fault is counted and logged once, and every request finishes."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import pytest
from slidingpolicy import Allocation, BatchPlan, Request, SchedulerState, by_name
from slidingpolicy.predictors import default_predictor
from slidingpolicy.step_trace import parse_step

from slidingpolicy_transformers.engine import Engine, EngineSettings
from slidingpolicy_transformers.testing import Job, drive

WORKLOAD = [Job(prompt=40 + 70 * i, output=5, arrive=0.01 * i) for i in range(6)]


@attrs.frozen
class Faulty:
    """A registered policy, broken every `every`-th plan by `breaks`."""

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
        more = tuple(Allocation(a.request_id, a.tokens + 1) for a in plan.allocations)
        return attrs.evolve(plan, allocations=more), pstate

    def observe(self, pstate: Any, state: SchedulerState, plan: BatchPlan, latency: float) -> Any:
        return self.inner.observe(pstate, state, plan, latency)

    def observe_decodes(
        self, pstate: Any, decodes: Sequence[Request], latencies: Sequence[float]
    ) -> Any:
        return self.inner.observe_decodes(pstate, decodes, latencies)


@pytest.mark.parametrize(
    ("breaks", "reason"),
    [("raise", "policy raised ZeroDivisionError"), ("invalid", "plan breaks invariant")],
)
def test_a_faulty_step_falls_back_to_the_engines_fifo(
    model_dir: Path,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    breaks: str,
    reason: str,
) -> None:
    policy = Faulty(by_name("sarathi-edf", default_predictor()), 3, breaks)
    trace = tmp_path / "trace.jsonl"
    settings = EngineSettings(model_dir, "sarathi-edf", {"trace": str(trace)}, num_blocks=256)
    engine = Engine(settings, policy)
    with caplog.at_level(logging.WARNING, logger="slidingpolicy_transformers"):
        done = drive(engine, WORKLOAD)
    assert done == {f"r{i}": job.output for i, job in enumerate(WORKLOAD)}
    scheduler = engine.binding.scheduler if engine.binding else None
    assert scheduler is not None
    faults = dict(scheduler.sliding_faults)
    assert len(faults) == 1
    assert next(iter(faults)).startswith(reason)
    assert next(iter(faults.values())) == scheduler.sliding_steps // 3
    logged = [r.getMessage() for r in caplog.records if r.name.startswith("slidingpolicy_")]
    assert len(logged) == 1
    assert reason in logged[0]
    assert "FIFO" in logged[0]
    steps = [parse_step(line) for line in trace.read_text().splitlines()]
    fallbacks = [s for s in steps if s.fallback is not None]
    assert len(fallbacks) == next(iter(faults.values()))
    assert all((s.plan is None) == (breaks == "raise") for s in fallbacks)


def test_a_snapshot_that_raises_falls_back(model_dir: Path) -> None:
    engine = Engine(EngineSettings(model_dir, "sarathi", num_blocks=256))
    assert engine.binding is not None

    def broken(request_id: str) -> Any:
        raise KeyError(request_id)

    engine.binding.slos.get = broken  # type: ignore[method-assign]
    assert drive(engine, WORKLOAD[:3]) == {f"r{i}": 5 for i in range(3)}
    scheduler = engine.binding.scheduler
    assert scheduler is not None
    assert scheduler.sliding_faults == {"snapshot raised KeyError": scheduler.sliding_steps}
