"""Scheduling policies: SlidingServe, its ablations and the baselines it is compared with."""

from slidingpolicy.policies.fixed_budget import FixedBudget, Stateless
from slidingpolicy.policies.learner import Learner, OnlineConfig
from slidingpolicy.policies.online import Online, OnlineState
from slidingpolicy.policies.qoserve import QoServe, QoServeConfig, QoServeState
from slidingpolicy.policies.registry import by_name, names, summary
from slidingpolicy.policies.slidingserve import SlidingServe, SlidingState

__all__ = [
    "FixedBudget",
    "Learner",
    "Online",
    "OnlineConfig",
    "OnlineState",
    "QoServe",
    "QoServeConfig",
    "QoServeState",
    "SlidingServe",
    "SlidingState",
    "Stateless",
    "by_name",
    "names",
    "summary",
]
