"""What the policy's loop decided for one step, and what it keeps of a step until its
measured time comes."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import attrs

from slidingpolicy.records.plan import BatchPlan
from slidingpolicy.records.state import SchedulerState

_NONE: Mapping[str, Any] = MappingProxyType({})


@attrs.frozen(slots=True)
class Decision:
    """One step's decision: the snapshot (None: it could not be taken), the plan, why the
    engine schedules the step itself (None: it runs the plan), the token budget the plan was
    checked against (the least of the policy's and the engine's), the engine's handle of
    each request of the snapshot by id, and the notice of each request the plan gives up."""

    state: SchedulerState | None
    plan: BatchPlan | None
    fallback: str | None
    budget: int
    handles: Mapping[str, Any] = attrs.field(default=_NONE, repr=False)
    given_up: Mapping[str, str] = _NONE

    @property
    def planned(self) -> BatchPlan | None:
        """The plan the engine is to run; None when it schedules the step itself."""
        return self.plan if self.fallback is None and self.state is not None else None


@attrs.frozen(slots=True)
class PendingStep:
    """A step the engine runs, waiting for its measured time: the engine's `key` for it,
    its decision, what it ran (request id → tokens) and when it started on the loop's
    clock."""

    key: object
    decision: Decision
    scheduled: Mapping[str, int]
    started: float
