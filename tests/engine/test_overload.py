"""At 10× capacity every policy keeps running, in bounded memory, and the engine rejects what
could never run."""

from __future__ import annotations

import tracemalloc

import pytest

from slidingpolicy.engine import EngineOptions, simulate
from slidingpolicy.errors import InvalidRecordError
from slidingpolicy.policies import by_name, names
from slidingpolicy.workloads import Poisson, RequestSpec, Workload, make_workload
from tests.engine.conftest import HARDWARE, hardware, predictor


@pytest.mark.slow
@pytest.mark.parametrize("policy", names())
def test_overload_completes_in_bounded_memory(policy: str) -> None:
    workload = make_workload("mixed-v1", 120, Poisson(10.0), 7)
    tracemalloc.start()
    out = simulate(
        by_name(policy, predictor(*HARDWARE[0])),
        workload,
        hardware(*HARDWARE[0]),
        7,
        EngineOptions(strict=True, kv_capacity_tokens=60000),
    )
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert out.metrics.completed == 120
    assert peak < 64 * 2**20


def test_a_request_larger_than_the_cache_is_rejected() -> None:
    workload = Workload("big", (RequestSpec("r0", 0.0, 5000, 10, 1.0, 0.1, "test"),))
    with pytest.raises(InvalidRecordError, match="exceed the KV capacity"):
        simulate(
            by_name("sarathi", predictor(*HARDWARE[0])),
            workload,
            hardware(*HARDWARE[0]),
            0,
            EngineOptions(kv_capacity_tokens=4096),
        )
