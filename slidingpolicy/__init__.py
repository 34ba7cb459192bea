"""slidingpolicy: SlidingServe, an SLO-aware sliding-window scheduler for LLM inference.

Immutable records in, plans out: `SchedulerState` → `Policy.plan` → `BatchPlan`.
"""

from slidingpolicy._version import __version__
from slidingpolicy.errors import (
    InvalidRecordError,
    PredictorFormatError,
    SlidingPolicyError,
    TraceFormatError,
    UnknownNameError,
)
from slidingpolicy.invariants import Violation, check_plan
from slidingpolicy.policies import (
    Online,
    OnlineConfig,
    SlidingServe,
    SlidingState,
    by_name,
    load_plugins,
    names,
    register,
)
from slidingpolicy.policy import DecodeRunObserver, Policy
from slidingpolicy.predictors import default_predictor
from slidingpolicy.pricing import LatencyPredictor, LinearModel
from slidingpolicy.pricing.budget import time_to_budget
from slidingpolicy.pricing.queue import PricedQueue
from slidingpolicy.pricing.throughput import next_throughput
from slidingpolicy.records.candidates import CandidateQueue
from slidingpolicy.records.plan import Allocation, BatchPlan, Diagnostics, PlanBranch
from slidingpolicy.records.request import Phase, Request
from slidingpolicy.records.sliding_config import SlidingConfig
from slidingpolicy.records.slo import SLO_KEYS, Slo, check_slo_value, read_slo
from slidingpolicy.records.state import SchedulerState
from slidingpolicy.stages.chunk import sliding_chunk
from slidingpolicy.stages.construct import construct_batch
from slidingpolicy.stages.order import sort_candidates

__all__ = [
    "SLO_KEYS",
    "Allocation",
    "BatchPlan",
    "CandidateQueue",
    "DecodeRunObserver",
    "Diagnostics",
    "InvalidRecordError",
    "LatencyPredictor",
    "LinearModel",
    "Online",
    "OnlineConfig",
    "Phase",
    "PlanBranch",
    "Policy",
    "PredictorFormatError",
    "PricedQueue",
    "Request",
    "SchedulerState",
    "SlidingConfig",
    "SlidingPolicyError",
    "SlidingServe",
    "SlidingState",
    "Slo",
    "TraceFormatError",
    "UnknownNameError",
    "Violation",
    "__version__",
    "by_name",
    "check_plan",
    "check_slo_value",
    "construct_batch",
    "default_predictor",
    "load_plugins",
    "names",
    "next_throughput",
    "read_slo",
    "register",
    "sliding_chunk",
    "sort_candidates",
    "time_to_budget",
]
