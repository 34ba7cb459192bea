"""The engine's fast paths equal the checked or vectorized definitions they replace."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from slidingpolicy.engine import EngineOptions, simulate
from slidingpolicy.engine import table as table_module
from slidingpolicy.engine.decode_run import RUN_CHUNK, RUN_SCALAR, run_times
from slidingpolicy.engine.noise import Normals, engine_rng
from slidingpolicy.engine.simulator import _Run
from slidingpolicy.engine.table import QUEUE_FROM
from slidingpolicy.hardware.roofline import noisy
from slidingpolicy.metrics import token_deadline
from slidingpolicy.policies import by_name
from slidingpolicy.records.plan import BatchPlan
from slidingpolicy.records.state import SchedulerState
from slidingpolicy.workloads import Poisson, make_workload
from tests.engine.conftest import HARDWARE, Fcfs, hardware, predictor


def _policy(name: str) -> Any:
    if name == "fcfs":
        return Fcfs()
    return by_name(name, predictor(*HARDWARE[0]))


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
    arrived = run.table.next_arrival
    log, c = run.log, run.table.columns
    generated = log.generated[:arrived]
    due = token_deadline(c.arrival[:arrived], c.ttft[:arrived], c.tbt[:arrived], generated + 1)
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
        _check_snapshot_definition(run)
        return step(pstate, budget)

    run._step = checked_step  # type: ignore[method-assign]
    run.run(None)
    assert checks
    assert all(fast == slow for fast, slow in checks)
    assert max(fast for fast, _ in checks) > 0
    assert run.log.late_count == int(np.count_nonzero(run.log.max_lateness > 0.0))


def _check_snapshot_definition(run: _Run) -> None:
    """The snapshot shows the admitted requests and the waiting ones whose whole prompt fits
    in the free blocks — in workload order when listed; from the table's queue, the decodes
    in workload order and the candidates in id order — and kv_free_tokens is
    `KVCache.free_tokens` of the live requests."""
    kv, table = run.kv, run.table
    fits = [
        i for i in table.live if kv.block_list[i] or -(-table.prompt[i] // 16) <= kv.free_blocks
    ]
    state = run.snapshot()
    if table.queue is None:
        assert [r.id for r in state.requests] == [table.ids[i] for i in fits]
    else:
        records = [table.records[i] for i in fits]
        decoding = [r.id for r in records if r is not None and r.is_decoding]
        waiting = [r.id for r in records if r is not None and not r.is_decoding]
        assert [r.id for r in state.decoding] == decoding
        assert [r.id for r in state.prefill_candidates] == sorted(waiting)
    assert state.kv_free_tokens == kv.free_tokens(np.array(list(table.live), dtype=np.int64))


@pytest.mark.parametrize("queue_from", [QUEUE_FROM, 8])
@pytest.mark.parametrize("kv", [9000, 12000])
def test_snapshots_under_memory_pressure_follow_their_definition(
    kv: int, queue_from: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(table_module, "QUEUE_FROM", queue_from)
    workload = make_workload("mixed-v1", 60, Poisson(4.0), 5)
    run = _Run(
        _policy("sarathi"),
        workload,
        hardware(*HARDWARE[0]),
        5,
        EngineOptions(strict=True, kv_capacity_tokens=kv),
        None,
    )
    step = run._step
    hidden = [0]
    kept = [0]

    def checked_step(pstate: Any, budget: int) -> tuple[Any, bool]:
        _check_snapshot_definition(run)
        hidden[0] += len(run.table.live) - len(run.snapshot().requests)
        kept[0] += run.table.queue is not None
        return step(pstate, budget)

    run._step = checked_step  # type: ignore[method-assign]
    out = run.run(None)
    assert not out.stalled
    assert hidden[0] > 0, "no waiting request was ever held back: the test shows nothing"
    assert kept[0] > 0 or queue_from == QUEUE_FROM, "the queued snapshot never ran"
    assert int(run.log.preemptions.sum()) > 0


def test_normals_are_the_generators_single_draws_in_order() -> None:
    single = engine_rng(11)
    blocks = Normals(engine_rng(11), block=7)
    expected = [float(single.standard_normal()) for _ in range(60)]
    got = [blocks.take() for _ in range(5)]
    got += blocks.peek(20)[:13]
    blocks.skip(13)
    got += [blocks.take() for _ in range(42)]
    assert got == expected


def _stepped_run(
    run: _Run, decodes: int, context: int, steps: int, arrival: float
) -> tuple[list[float], list[float]]:
    """The decode run as stepping computes it: one iteration at a time."""
    rng = engine_rng(0)
    now = run.now
    times: list[float] = []
    latencies: list[float] = []
    for j in range(steps):
        if times and now >= arrival:
            break
        one = np.array([context + j * decodes], dtype=np.int64)
        latency = noisy(
            float(run.hardware.decode_latencies(decodes, one)[0]), run.hardware.noise_sigma, rng
        )
        now += latency
        times.append(now)
        latencies.append(latency)
    return times, latencies


CROSSINGS = [0, 1, RUN_SCALAR - 1, RUN_SCALAR, RUN_SCALAR + RUN_CHUNK - 1, RUN_SCALAR + RUN_CHUNK]


@pytest.mark.parametrize("crossing", [*CROSSINGS, RUN_SCALAR + 3 * RUN_CHUNK - 1, 500, None])
def test_run_times_equal_stepping_wherever_the_arrival_falls(crossing: int | None) -> None:
    workload = make_workload("sharegpt", 5, Poisson(1.0), 0)
    run = _Run(Fcfs(), workload, hardware(*HARDWARE[0]), 0, EngineOptions(), None)
    run.now = 3.0
    decodes, context, steps = 6, 4000, 300
    reference, _ = _stepped_run(run, decodes, context, steps, math.inf)
    # An arrival at the end of iteration `crossing` (or never): stepping stops after it.
    arrival = math.inf if crossing is None or crossing >= steps else reference[crossing]
    for at in (arrival, math.nextafter(arrival, 0.0)):
        normals = Normals(engine_rng(0))
        assert run_times(
            run.hardware, normals, run.now, decodes, context, steps, at
        ) == _stepped_run(run, decodes, context, steps, at)
