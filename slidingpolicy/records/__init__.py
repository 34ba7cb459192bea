"""The records a policy reads and writes: requests, the scheduler's snapshot, plans, config."""

from slidingpolicy.records.candidates import CandidateQueue
from slidingpolicy.records.plan import Allocation, BatchPlan, Diagnostics, PlanBranch
from slidingpolicy.records.request import Phase, Request
from slidingpolicy.records.sliding_config import SlidingConfig
from slidingpolicy.records.state import SchedulerState

__all__ = [
    "Allocation",
    "BatchPlan",
    "CandidateQueue",
    "Diagnostics",
    "Phase",
    "PlanBranch",
    "Request",
    "SchedulerState",
    "SlidingConfig",
]
