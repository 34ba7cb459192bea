"""The policy protocol: pure functions over an explicit state the caller keeps (optax-style)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar, runtime_checkable

from slidingpolicy.records.plan import BatchPlan
from slidingpolicy.records.request import Request
from slidingpolicy.records.state import SchedulerState

PolicyState = TypeVar("PolicyState")


class Policy(Protocol[PolicyState]):
    """A scheduler: `init` its state, `plan` one iteration, `observe` the measured latency.

    Whatever a policy remembers between iterations lives in its `PolicyState`, never in the
    policy object; the same (pstate, state) always gives the same plan.
    """

    @property
    def name(self) -> str:
        """The registry name, e.g. "slidingserve"."""
        ...

    @property
    def token_budget(self) -> int:
        """The most tokens one plan may hold (B_max for SlidingServe)."""
        ...

    def init(self) -> PolicyState:
        """The state before the first iteration."""
        ...

    def plan(self, pstate: PolicyState, state: SchedulerState) -> tuple[BatchPlan, PolicyState]:
        """The batch to run now, and the state after deciding it."""
        ...

    def observe(
        self, pstate: PolicyState, state: SchedulerState, plan: BatchPlan, latency: float
    ) -> PolicyState:
        """The state after `plan`, made on `state`, ran and took `latency` seconds.

        `state` is there because what a policy learns can depend on the batch's requests
        (the online predictor needs each allocation's cached context, u_i).
        """
        ...


@runtime_checkable
class DecodeRunObserver(Protocol[PolicyState]):
    """A policy that can observe a run of decode-only iterations at once (optional).

    The engine advances such runs in closed form, where every plan is "each decode gets one
    token"; a policy that offers this is told about the whole run in one call, any other is
    told about each iteration through `Policy.observe` (`engine.observation`).
    """

    def observe_decodes(
        self, pstate: PolicyState, decodes: Sequence[Request], latencies: Sequence[float]
    ) -> PolicyState:
        """The state after len(latencies) decode-only iterations, iteration j giving every
        request of `decodes` (as it was before the first) one more token in latencies[j]
        seconds. Must equal observing each of those iterations."""
        ...
