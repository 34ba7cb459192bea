"""The simulator's records: the options a run takes, the figures and output it gives, and
the hooks a caller may pass to watch it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import numpy as np
from numpy.typing import NDArray

from slidingpolicy import _validate
from slidingpolicy.errors import InvalidRecordError
from slidingpolicy.metrics import Metrics, RequestOutcome
from slidingpolicy.policies.registry import shipped
from slidingpolicy.pricing.throughput import THROUGHPUT_MEMORY
from slidingpolicy.records.plan import BatchPlan
from slidingpolicy.records.state import SchedulerState
from slidingpolicy.step_trace import TraceStep

IntArray = NDArray[np.int64]


@attrs.frozen(slots=True)
class EngineOptions:
    """How the engine runs (not what it simulates).

    - `strict`: check every plan with `check_plan` and raise `PlanViolationError` on any
      violation: True always (as the tests do), False never, None (the default) for a policy
      not shipped with the library (`policies.registry.shipped`): a policy of your own is
      checked, ours, whose plans the test suite proves, run unchecked.
    - `closed_form`: advance decode-only runs at once (identical results; off = step them).
    - `kv_capacity_tokens`: override the hardware's KV capacity (e.g. to study memory pressure).
    - `throughput_memory`: weight of the past in the prefill throughput average ρ_t.
    - `max_run`: the most iterations one closed-form run advances at once (bounds memory).
    - `miss_budget`: stop the run early once more requests than this have certainly missed
      their SLO (a token came late, or a deadline passed before its token); the capacity
      search sets it to what 99% attainment allows, as the outcome is then known.
    """

    strict: bool | None = None
    closed_form: bool = True
    kv_capacity_tokens: int | None = None
    throughput_memory: float = THROUGHPUT_MEMORY
    max_run: int = 4096
    miss_budget: int | None = None

    def __attrs_post_init__(self) -> None:
        record = "engine options"
        if self.strict is not None:
            _validate.flag(record, "strict", self.strict)
        _validate.flag(record, "closed_form", self.closed_form)
        if self.kv_capacity_tokens is not None:
            _validate.integer(record, "kv_capacity_tokens", self.kv_capacity_tokens, 1)
        memory = _validate.non_negative(record, "throughput_memory", self.throughput_memory)
        if memory >= 1.0:
            raise InvalidRecordError(record, "throughput_memory", f"={memory} must be < 1")
        _validate.integer(record, "max_run", self.max_run, 1)
        if self.miss_budget is not None:
            _validate.integer(record, "miss_budget", self.miss_budget, 0)

    def checks(self, policy: object) -> bool:
        """Whether a run of `policy` checks every plan (`strict`)."""
        return not shipped(policy) if self.strict is None else self.strict


@attrs.frozen(slots=True)
class EngineStats:
    """How the engine got there: wall-clock and CPU figures, kept out of the compared results."""

    decisions: int
    decode_runs: int
    run_iterations: int
    wall_seconds: float
    policy_cpu_seconds: float
    policy_cpu_p50: float
    policy_cpu_p99: float

    def to_dict(self) -> dict[str, Any]:
        """Plain values for JSON."""
        return attrs.asdict(self)


@attrs.frozen(slots=True)
class RunOutput:
    """One simulation: the metrics, per-request outcomes, where it ended, and engine figures."""

    metrics: Metrics
    outcome: RequestOutcome
    end: float
    stalled: bool
    stats: EngineStats
    stopped_early: bool = False
    kv_blocks_in_use: int = 0
    policy_state: Any = None


StateHook = Callable[[SchedulerState, BatchPlan, int], None]
"""Called with each planned (state, plan, token budget), before the plan runs."""

StepHook = Callable[[TraceStep], None]
"""Called with each step once it ran (`step_trace`): the state, the plan (None for a step of a
decode-only run advanced in closed form), the batch that ran and its measured latency; a plan
that ran nothing gives a step with nothing scheduled and latency None. Writes a step trace."""

Probe = Callable[[float, int, int, IntArray, IntArray], None]
"""Called after every step or closed-form run with (now, KV blocks in use, KV blocks in all,
request indices that produced tokens, how many each): what the conservation tests watch."""
