"""Runs of the offline engine: what to simulate as picklable specs (`specs`), where trials run
(`workers`), rate sweeps and capacity searches (`capacity_search`), the batches a run executes
(`batches`), and results on disk with their provenance (`results`, `provenance`)."""

from __future__ import annotations

from slidingpolicy.runs.capacity_search import CapacityResult, capacities, capacity_search
from slidingpolicy.runs.specs import (
    HardwareSpec,
    RunSpec,
    RunSummary,
    WorkloadSpec,
    run,
    run_many,
    sweep,
)

__all__ = [
    "CapacityResult",
    "HardwareSpec",
    "RunSpec",
    "RunSummary",
    "WorkloadSpec",
    "capacities",
    "capacity_search",
    "run",
    "run_many",
    "sweep",
]
