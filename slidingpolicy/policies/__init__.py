"""Scheduling policies: SlidingServe, its ablations and the baselines it is compared with, and
the registry where a policy of your own joins them."""

from slidingpolicy.policies.fixed_budget import FixedBudget, Stateless
from slidingpolicy.policies.learner import Learner, OnlineConfig
from slidingpolicy.policies.online import Online, OnlineState
from slidingpolicy.policies.plugin_loader import load_plugins
from slidingpolicy.policies.qoserve import QoServe, QoServeConfig, QoServeState
from slidingpolicy.policies.registry import by_name, names, register, summary
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
    "load_plugins",
    "names",
    "register",
    "summary",
]
