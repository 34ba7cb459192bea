"""Scheduling policies: SlidingServe, its ablations and the baselines it is compared with."""

from slidingpolicy.policies.fixed_budget import FixedBudget, Stateless
from slidingpolicy.policies.online import Online, OnlineConfig, OnlineState
from slidingpolicy.policies.qoserve import QoServe, QoServeConfig, QoServeState
from slidingpolicy.policies.registry import by_name, names, summary
from slidingpolicy.policies.slidingserve import SlidingServe, SlidingState

__all__ = [
    "FixedBudget",
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
