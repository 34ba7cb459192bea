"""The offline engine: simulate a policy on a workload over a hardware model, and measure it.

Running many simulations (specs, sweeps, capacity searches, where trials run, results on
disk) is `slidingpolicy.runs`; the figures are `slidingpolicy.figures`.
"""

from __future__ import annotations

from slidingpolicy.engine.kv import KVCache
from slidingpolicy.engine.noise import engine_rng
from slidingpolicy.engine.run_errors import EngineError, PlanViolationError
from slidingpolicy.engine.run_types import EngineOptions, EngineStats, RunOutput
from slidingpolicy.engine.simulator import simulate
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
    "EngineError",
    "EngineOptions",
    "EngineStats",
    "KVCache",
    "Metrics",
    "PlanViolationError",
    "RequestOutcome",
    "RunOutput",
    "TokenLog",
    "engine_rng",
    "percentile",
    "simulate",
    "summarize",
    "token_deadline",
]
