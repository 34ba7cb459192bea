"""Liveness under memory pressure: a started prefill always finishes, and every run with enough
memory for each request alone completes — no preempt/re-prefill cycle (livelock)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from slidingpolicy.engine import EngineOptions, simulate
from slidingpolicy.policies import by_name, names
from slidingpolicy.workloads import Poisson, RequestSpec, Workload, make_workload
from tests.engine.conftest import HARDWARE, Fcfs, hardware, predictor


class LivelockError(Exception):
    """A run took more iterations than its work can explain."""


def _guarded(limit: int):  # type: ignore[no-untyped-def]
    """A probe that raises once the engine has run `limit` iterations."""
    steps = [0]

    def probe(now: float, used: int, total: int, idx: np.ndarray, n: np.ndarray) -> None:
        steps[0] += int(n.max()) if n.size else 1
        if steps[0] > limit:
            raise LivelockError(f"over {limit} iterations")

    return probe


def _work(workload: Workload) -> int:
    columns = workload.columns()
    return int((columns.prompt + columns.output).sum())


def test_partial_prefills_cannot_fill_the_cache_for_ever() -> None:
    """Regression: with per-chunk allocation, partial prefills filled this cache, each one token
    short of its prompt; the engine preempted the newest holder, the policy re-prefilled it into
    the freed blocks, and the cycle never ended."""
    workload = make_workload("mixed-v1", 60, Poisson(2.0), 7)
    policy = by_name("slidingserve", predictor(*HARDWARE[0]))
    options = EngineOptions(strict=True, kv_capacity_tokens=12_000)
    probe = _guarded(10 * _work(workload))
    out = simulate(policy, workload, hardware(*HARDWARE[0]), 7, options, probe=probe)
    assert out.outcome.completed.all()
    assert out.kv_blocks_in_use == 0


@settings(max_examples=40, deadline=None)
@given(
    policy=st.sampled_from(("fcfs", *names())),
    lengths=st.lists(st.tuples(st.integers(1, 700), st.integers(1, 50)), min_size=1, max_size=12),
    gaps=st.lists(st.floats(0.0, 0.3), min_size=12, max_size=12),
    spare_blocks=st.integers(0, 40),
    seed=st.integers(0, 2**16),
)
def test_every_run_with_room_for_each_request_completes(
    policy: str,
    lengths: list[tuple[int, int]],
    gaps: list[float],
    spare_blocks: int,
    seed: int,
) -> None:
    times = np.cumsum(gaps[: len(lengths)])
    specs = tuple(
        RequestSpec(f"q{k}", float(t), p, o, 1.0, 0.05, "test")
        for k, ((p, o), t) in enumerate(zip(lengths, times, strict=True))
    )
    workload = Workload("pressure", specs)
    largest = max(p + o for p, o in lengths)
    capacity = (-(-largest // 16) + spare_blocks) * 16
    chosen = Fcfs() if policy == "fcfs" else by_name(policy, predictor(*HARDWARE[0]))
    options = EngineOptions(strict=True, kv_capacity_tokens=capacity)
    probe = _guarded(10 * _work(workload) + 100)
    out = simulate(chosen, workload, hardware(*HARDWARE[0]), seed, options, probe=probe)
    assert not out.stalled
    assert out.outcome.completed.all()
    assert out.kv_blocks_in_use == 0
