"""Decode-only runs advanced in closed form give byte for byte what stepping gives."""

from __future__ import annotations

import numpy as np
import pytest

from slidingpolicy.engine import EngineOptions, simulate
from slidingpolicy.runs.results import dumps, outcome_rows
from slidingpolicy.workloads import Poisson, make_workload
from tests.engine.conftest import HARDWARE, Fcfs, hardware


def _document(closed_form: bool, seed: int, kv: int | None, which: tuple[str, str, int]) -> str:
    workload = make_workload("mixed-v1", 60, Poisson(1.5), seed)
    out = simulate(
        Fcfs(),
        workload,
        hardware(*which),
        seed,
        EngineOptions(strict=True, closed_form=closed_form, kv_capacity_tokens=kv),
    )
    ids = [r.id for r in workload.requests]
    return dumps({"metrics": out.metrics.to_dict(), "requests": outcome_rows(ids, out.outcome)})


@pytest.mark.parametrize("which", HARDWARE)
@pytest.mark.parametrize(("seed", "kv"), [(0, None), (1, None), (2, 12000)])
def test_closed_form_equals_stepping(
    seed: int, kv: int | None, which: tuple[str, str, int]
) -> None:
    assert _document(True, seed, kv, which) == _document(False, seed, kv, which)


def test_closed_form_runs_happen() -> None:
    workload = make_workload("sharegpt", 40, Poisson(0.5), 3)
    out = simulate(Fcfs(), workload, hardware(*HARDWARE[0]), 3, EngineOptions())
    assert out.stats.run_iterations > out.metrics.iterations // 2


@pytest.mark.parametrize("closed_form", [True, False])
def test_policy_observes_every_iteration(closed_form: bool) -> None:
    workload = make_workload("sharegpt", 30, Poisson(0.5), 4)
    options = EngineOptions(closed_form=closed_form)
    out = simulate(Fcfs(), workload, hardware(*HARDWARE[0]), 4, options)
    count, _ = out.policy_state
    assert count == out.metrics.iterations
    assert (out.stats.decode_runs > 0) == closed_form


def test_observed_latencies_identical_both_ways() -> None:
    workload = make_workload("sharegpt", 30, Poisson(0.5), 5)
    states = [
        simulate(Fcfs(), workload, hardware(*HARDWARE[0]), 5, EngineOptions(closed_form=c))
        for c in (True, False)
    ]
    assert states[0].policy_state == states[1].policy_state


def test_decode_latencies_match_single_iterations() -> None:
    hw = hardware(*HARDWARE[0])
    contexts = np.array([700, 1200, 33, 4096], dtype=np.int64)
    totals = int(contexts.sum()) + np.arange(5, dtype=np.int64) * contexts.size
    run = hw.decode_latencies(contexts.size, totals)
    for j in range(5):
        one = hw.latency(np.ones(contexts.size, dtype=np.int64), contexts + j)
        assert run[j] == one
