"""Faults to hold a binding to: a policy that raises or breaks an invariant every n-th plan,
a policy that plans past the engine's budget, and a request whose record cannot be made."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Literal

import attrs

from slidingpolicy.embedding.loop import EngineView
from slidingpolicy.errors import InvalidRecordError
from slidingpolicy.policy import Policy
from slidingpolicy.records.plan import Allocation, BatchPlan
from slidingpolicy.records.request import Request
from slidingpolicy.records.slo import Slo
from slidingpolicy.records.state import SchedulerState

Breaks = Literal["raise", "invalid"]


@attrs.define
class Faulty:
    """`inner`, broken every `every`-th plan: it raises (`raise`), or gives every request of
    the plan one token more than planned (`invalid`: invariant 2 or the chunk's)."""

    inner: Policy[Any]
    every: int
    breaks: Breaks
    plans: int = 0
    broken: int = 0

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def token_budget(self) -> int:
        return self.inner.token_budget

    def init(self) -> Any:
        return self.inner.init()

    def plan(self, pstate: Any, state: SchedulerState) -> tuple[BatchPlan, Any]:
        self.plans += 1
        plan, pstate = self.inner.plan(pstate, state)
        if self.plans % self.every or not plan.allocations:
            return plan, pstate
        self.broken += 1
        if self.breaks == "raise":
            raise ZeroDivisionError("policy bug")
        more = tuple(Allocation(a.request_id, a.tokens + 1) for a in plan.allocations)
        return attrs.evolve(plan, allocations=more), pstate

    def observe(self, pstate: Any, state: SchedulerState, plan: BatchPlan, latency: float) -> Any:
        return self.inner.observe(pstate, state, plan, latency)

    def observe_decodes(
        self, pstate: Any, decodes: Sequence[Request], latencies: Sequence[float]
    ) -> Any:
        observe = getattr(self.inner, "observe_decodes", None)
        return pstate if observe is None else observe(pstate, decodes, latencies)


@attrs.define
class Poisoned:
    """An engine's view whose records of the requests `ids` cannot be made (as a request
    whose SLOs or counts no `Request` holds)."""

    inner: EngineView[Any]
    ids: frozenset[str]

    def candidates(self) -> Iterable[tuple[str, Any]]:
        return self.inner.candidates()

    def slo(self, handle: Any, default: Slo) -> Slo:
        return self.inner.slo(handle, default)

    def stamp(self, handle: Any) -> float:
        return self.inner.stamp(handle)

    def clock(self) -> float:
        return self.inner.clock()

    def record(
        self, handle: Any, slo: Slo, arrival: float, known: Request | None
    ) -> Request | None:
        record = self.inner.record(handle, slo, arrival, known)
        if record is not None and record.id in self.ids:
            raise InvalidRecordError("request", "prompt_tokens", "poisoned by the test")
        return record

    def live(self, request_id: str) -> bool:
        return self.inner.live(request_id)
