"""Scheduling policies: SlidingServe and the baselines it is compared with."""

from slidingpolicy.policies.slidingserve import SlidingServe, SlidingState

__all__ = ["SlidingServe", "SlidingState"]
