"""slidingpolicy: SlidingServe, an SLO-aware sliding-window scheduler for LLM inference.

Immutable records in, plans out: `SchedulerState` → `Policy.plan` → `BatchPlan`.
"""

from slidingpolicy.budget import time_to_budget
from slidingpolicy.chunker import sliding_chunk
from slidingpolicy.config import SlidingConfig
from slidingpolicy.constructor import construct_batch
from slidingpolicy.errors import (
    InvalidRecordError,
    PredictorFormatError,
    SlidingPolicyError,
    TraceFormatError,
    UnknownNameError,
)
from slidingpolicy.invariants import Violation, check_plan
from slidingpolicy.plan import Allocation, BatchPlan, Diagnostics, PlanPath
from slidingpolicy.policies import SlidingServe, SlidingState, by_name, names
from slidingpolicy.policy import Policy
from slidingpolicy.predictor import LatencyPredictor, LinearModel
from slidingpolicy.request import Phase, Request
from slidingpolicy.sorter import sort_candidates
from slidingpolicy.state import SchedulerState

__all__ = [
    "Allocation",
    "BatchPlan",
    "Diagnostics",
    "InvalidRecordError",
    "LatencyPredictor",
    "LinearModel",
    "Phase",
    "PlanPath",
    "Policy",
    "PredictorFormatError",
    "Request",
    "SchedulerState",
    "SlidingConfig",
    "SlidingPolicyError",
    "SlidingServe",
    "SlidingState",
    "TraceFormatError",
    "UnknownNameError",
    "Violation",
    "by_name",
    "check_plan",
    "construct_batch",
    "names",
    "sliding_chunk",
    "sort_candidates",
    "time_to_budget",
]
