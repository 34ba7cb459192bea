"""The engine's fast paths equal the checked or vectorized definitions they replace."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from slidingpolicy.engine import EngineOptions, simulate
from slidingpolicy.engine.simulator import _Run
from slidingpolicy.plan import BatchPlan
from slidingpolicy.policies import by_name
from slidingpolicy.predictor.profiling import default_predictor
from slidingpolicy.state import SchedulerState
from slidingpolicy.workloads import Poisson, make_workload
from tests.engine.conftest import HARDWARE, Fcfs, hardware


def _policy(name: str) -> Any:
    if name == "fcfs":
        return Fcfs()
    return by_name(name, default_predictor(*HARDWARE[0]))


@pytest.mark.parametrize("name", ["fcfs", "sarathi", "slidingserve"])
@pytest.mark.parametrize("kv", [None, 40000])
def test_every_snapshot_equals_the_checked_state(name: str, kv: int | None) -> None:
    seen = 0

    def check(state: SchedulerState, plan: BatchPlan, budget: int) -> None:
        nonlocal seen
        checked = SchedulerState(
            state.now, state.requests, state.prefill_throughput, state.kv_free_tokens
        )
        assert state == checked
        assert state.decoding == checked.decoding
        assert state.prefill_candidates == checked.prefill_candidates
        assert isinstance(state.requests, tuple)
        seen += 1

    workload = make_workload("mixed-v1", 60, Poisson(2.0), 7)
    options = EngineOptions(strict=True, kv_capacity_tokens=kv)
    simulate(_policy(name), workload, hardware(*HARDWARE[0]), 7, options, on_plan=check)
    assert seen > 0


def _certain_misses_by_arrays(run: _Run) -> int:
    """The definition: arrived requests with a late token, or unfinished past a deadline."""
    arrived = run.next_arrival
    log, c = run.log, run.columns
    generated = log.generated[:arrived]
    due = c.arrival[:arrived] + c.ttft[:arrived] + generated * c.tbt[:arrived]
    late = (log.max_lateness[:arrived] > 0.0) | ((generated < c.output[:arrived]) & (due < run.now))
    return int(np.count_nonzero(late))


@pytest.mark.parametrize("closed_form", [True, False])
def test_certain_misses_equal_their_definition(closed_form: bool) -> None:
    workload = make_workload("arxiv", 80, Poisson(8.0), 3)
    run = _Run(
        Fcfs(),
        workload,
        hardware(*HARDWARE[0]),
        3,
        EngineOptions(closed_form=closed_form, kv_capacity_tokens=30000),
        None,
    )
    step = run._step
    checks = []

    def checked_step(pstate: Any, budget: int) -> tuple[Any, bool]:
        checks.append((run._certain_misses(), _certain_misses_by_arrays(run)))
        return step(pstate, budget)

    run._step = checked_step  # type: ignore[method-assign]
    run.run(None)
    assert checks
    assert all(fast == slow for fast, slow in checks)
    assert max(fast for fast, _ in checks) > 0
    assert run.log.late_count == int(np.count_nonzero(run.log.max_lateness > 0.0))
