"""The offline engine: simulate policies on workloads over hardware models, and measure them."""

from __future__ import annotations

from slidingpolicy.engine.capacity import CapacityResult, capacities, capacity_search
from slidingpolicy.engine.kv import KVCache
from slidingpolicy.engine.simulator import (
    EngineError,
    EngineOptions,
    EngineStats,
    PlanViolationError,
    RunOutput,
    engine_rng,
    simulate,
)
from slidingpolicy.engine.sweep import (
    HardwareSpec,
    RunSpec,
    RunSummary,
    WorkloadSpec,
    run,
    run_many,
    sweep,
)
from slidingpolicy.metrics import (
    SLO_TARGET,
    Metrics,
    RequestOutcome,
    TokenLog,
    percentile,
    summarize,
    token_deadline,
)

__all__ = [
    "SLO_TARGET",
    "CapacityResult",
    "EngineError",
    "EngineOptions",
    "EngineStats",
    "HardwareSpec",
    "KVCache",
    "Metrics",
    "PlanViolationError",
    "RequestOutcome",
    "RunOutput",
    "RunSpec",
    "RunSummary",
    "TokenLog",
    "WorkloadSpec",
    "capacities",
    "capacity_search",
    "engine_rng",
    "percentile",
    "run",
    "run_many",
    "simulate",
    "summarize",
    "sweep",
    "token_deadline",
]
