"""What a policy decides for one iteration: allocations, the deciding branch and policy,
diagnostics."""

from __future__ import annotations

import enum
import math
from collections.abc import Callable

import attrs

from slidingpolicy import _validate
from slidingpolicy.errors import InvalidRecordError
from slidingpolicy.records._unchecked import constructor


class PlanBranch(enum.StrEnum):
    """Which branch decided a plan: SlidingServe's chunker or constructor (Fig. 3), `idle`
    when there is nothing to run, or `whole` when the policy's one rule decided it (a
    baseline's, or a policy of your own).

    A closed set, so that `check_plan` knows which invariants apply (6 to "constructor", 7 to
    "chunker"); each member is a `str` equal to its value, so "chunker" == PlanBranch.CHUNKER
    and logs hold plain strings. Which policy made the plan is `BatchPlan.policy`, open.
    """

    CHUNKER = "chunker"
    CONSTRUCTOR = "constructor"
    IDLE = "idle"
    WHOLE = "whole"


def plan_branch(value: str) -> PlanBranch:
    """`value` as a `PlanBranch`; InvalidRecordError listing the branches when it is none."""
    if type(value) is PlanBranch:
        return value
    try:
        return PlanBranch(value)
    except ValueError:
        known = ", ".join(b.value for b in PlanBranch)
        raise InvalidRecordError(
            "batch plan", "branch", f"={value!r} is not one of {known}"
        ) from None


@attrs.frozen(slots=True)
class Allocation:
    """`tokens` new tokens of request `request_id` in this iteration (c_i of eq. 4)."""

    request_id: str
    tokens: int

    def __attrs_post_init__(self) -> None:
        valid_id = type(self.request_id) is str and self.request_id
        if valid_id and type(self.tokens) is int and self.tokens >= 1:
            return
        if not isinstance(self.request_id, str) or not self.request_id:
            raise InvalidRecordError(
                "allocation", "request_id", f"must be a non-empty str, got {self.request_id!r}"
            )
        _validate.integer(self._name, "tokens", self.tokens, 1)

    def _name(self) -> str:
        return f"allocation {self.request_id!r}"


trusted_allocation: Callable[[str, int], Allocation] = constructor(Allocation)
"""`Allocation(request_id, tokens)` without its checks, for a stage that names a checked
record's id and counts its tokens (≥ 1) itself: a plan builds one per decode."""


@attrs.frozen(slots=True)
class Diagnostics:
    """Why a plan is what it is: the window (eq. 7–8), the budgets, the constructor's anchor,
    and the latency margin m its predicted latencies were held to (T̂·m against deadlines;
    1.0 for a policy without one, and in logs written before plans carried it).

    Times are seconds; None where the quantity does not apply (no D_safe, no window, the
    chunker path).
    """

    t_cur: float | None = None
    t_next: float | None = None
    budget_sum: int = 0
    candidate_latency: float | None = None
    risky: tuple[str, ...] = ()
    anchor: str | None = None
    anchor_slack: float | None = None
    repaired: bool = False
    margin: float = 1.0

    def __attrs_post_init__(self) -> None:
        margin = self.margin
        if type(margin) is float and 1.0 <= margin < math.inf:
            return
        if _validate.finite("diagnostics", "margin", margin) < 1.0:
            raise InvalidRecordError("diagnostics", "margin", f"={margin} must be >= 1")


@attrs.frozen(slots=True)
class BatchPlan:
    """The batch to run now.

    `allocations` give each request of the batch its tokens (c_i), each request at most once.
    `branch` says which branch decided the plan (`PlanBranch`: it tells `check_plan` which
    invariants apply). `prefill_budget` is the prefill tokens the plan allowed: SlidingServe's
    B, what its chunker or constructor decided; any other policy's, the prefill tokens its
    plan holds (no invariant reads it; traces and QoServe's throughput estimate do).
    `predicted_latency` is T̂ of the batch in seconds (eq. 4–6), as the policy priced it
    (0.0 for one that prices nothing): invariants 6 and 7 bound SlidingServe's by deadlines,
    and the engine reports its error beside the measured latency (predictor MAE).

    `preempted` lists decodes left out because KV memory is short (the engine preempts them);
    `deferred` lists decodes left out because the token budget is short (they wait a step);
    `given_up` lists waiting or prefilling requests whose SLO can no longer be met, which the
    policy will not schedule again (`SlidingConfig.give_up_after`): the engine finishes each
    with its own reason, so that a client or router can retry it elsewhere.

    `policy` is the name of the policy that made the plan (its registry name, open: a policy
    of your own names its plans too); "" when none did (an engine's own plan, or a log line
    written before plans named their policy).
    """

    allocations: tuple[Allocation, ...]
    branch: PlanBranch = attrs.field(converter=plan_branch)
    policy: str
    prefill_budget: int
    predicted_latency: float
    diagnostics: Diagnostics = attrs.field(factory=Diagnostics)
    preempted: tuple[str, ...] = ()
    deferred: tuple[str, ...] = ()
    given_up: tuple[str, ...] = ()

    def __attrs_post_init__(self) -> None:
        budget, latency = self.prefill_budget, self.predicted_latency
        valid_budget = type(budget) is int and budget >= 0 and type(self.policy) is str
        if valid_budget and type(latency) is float and 0.0 <= latency < math.inf:
            return
        record = "batch plan"
        if not isinstance(self.policy, str):
            raise InvalidRecordError(record, "policy", f"must be a str, got {self.policy!r}")
        _validate.integer(record, "prefill_budget", self.prefill_budget, 0)
        _validate.non_negative(record, "predicted_latency", self.predicted_latency)

    @property
    def total_tokens(self) -> int:
        """Σ c_i over the plan: the batch's token count and its new KV slots."""
        return sum(a.tokens for a in self.allocations)

    def tokens_of(self) -> dict[str, int]:
        """The allocations as a mapping from request id to tokens."""
        return {a.request_id: a.tokens for a in self.allocations}
