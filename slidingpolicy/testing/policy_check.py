"""`check_policy`: any policy held to what the library's own are proved to hold.

On random states (`testing.strategies`), each decision of a policy is held to:

- **purity**: `plan` and `observe` leave the state and policy state they are given as they
  were (what a policy remembers goes in the policy state it returns);
- **the token budget**: `token_budget` is an int ≥ 1, and no plan holds more tokens
  (invariant 4 of `check_plan`);
- **the plan invariants**: the others of `check_plan` (1–3, 5–7: known requests, one token
  per decode, at most r_i per prefill, the decodes left out listed, the free KV slots, and
  the branch's own);
- **determinism**: the same (pstate, state) gives the same plan and the same policy state
  (invariant 8), however often it is asked;
- **its name**: every plan names the policy (`BatchPlan.policy`);

and then it runs a short simulation with every plan checked (the engine's strict mode),
which must serve every request. A property broken raises `PolicyCheckError`, which names it.
"""

from __future__ import annotations

import enum
import pickle
from collections.abc import Sequence
from typing import Any

import attrs

from slidingpolicy.engine import EngineOptions, simulate
from slidingpolicy.engine.run_errors import PlanViolationError
from slidingpolicy.engine.run_types import RunOutput
from slidingpolicy.hardware import default_hardware
from slidingpolicy.invariants import Violation, check_plan
from slidingpolicy.policy import Policy
from slidingpolicy.records.plan import BatchPlan
from slidingpolicy.records.state import SchedulerState
from slidingpolicy.testing import strategies
from slidingpolicy.testing._hypothesis import HealthCheck, Phase, given, settings, st
from slidingpolicy.workloads import Poisson, make_workload

BUDGET_INVARIANT = 4
"""The invariant of `check_plan` that bounds a plan's tokens by the policy's budget."""


class Property(enum.StrEnum):
    """A property `check_policy` holds a policy to (module docstring)."""

    PURITY = "purity"
    BUDGET = "the token budget"
    INVARIANTS = "the plan invariants"
    DETERMINISM = "determinism"
    NAME = "its name"
    RUN = "a simulated run"


class PolicyCheckError(AssertionError):
    """A policy broke a property of `check_policy`; `broken` says which, the message what."""

    def __init__(self, policy: str, broken: Property, detail: str) -> None:
        super().__init__(f"policy {policy!r} breaks {broken}: {detail}")
        self.policy = policy
        self.broken = broken
        self.detail = detail

    def __reduce__(self) -> tuple[Any, ...]:
        """Rebuilt from its fields, so that a worker process can hand it back."""
        return type(self), (self.policy, self.broken, self.detail)


Step = tuple[SchedulerState, float]
"""A state to plan on, and the latency the plan's batch then took (seconds)."""


def check_policy(
    policy: Policy[Any],
    *,
    examples: int = 40,
    steps: int = 3,
    states: st.SearchStrategy[SchedulerState] | None = None,
    requests: int = 60,
    seed: int = 0,
    shrink: bool = True,
) -> None:
    """Hold `policy` to every property of the module docstring: `examples` random runs of
    up to `steps` decisions (plan, then observe) from `policy.init()` on `states` (default:
    listed, queued and pressed states of `testing.strategies`), then a simulation of
    `requests` requests (mixed-v1, Poisson at 2 req/s, the default hardware, `seed`) with
    every plan checked. Raises `PolicyCheckError` naming the first property broken, after
    hypothesis has shrunk the example that broke it to a small one (which can take minutes:
    `shrink=False` reports the first example found instead). The other settings are those
    of hypothesis's profile in force.
    """
    _check_declared(policy)
    drawn = states if states is not None else any_states()
    latencies = st.floats(1e-4, 0.5)
    phases = [Phase.explicit, Phase.reuse, Phase.generate, Phase.target]

    @settings(
        max_examples=examples,
        deadline=None,
        phases=[*phases, Phase.shrink] if shrink else phases,
        report_multiple_bugs=False,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(st.lists(st.tuples(drawn, latencies), min_size=1, max_size=steps))
    def decisions(drawn_steps: list[Step]) -> None:
        check_decisions(policy, drawn_steps)

    decisions()
    check_run(policy, requests, seed)


def any_states() -> st.SearchStrategy[SchedulerState]:
    """The states `check_policy` draws by default: listed (`states`), as an engine keeps them
    (`queued_states`), and pressed close to their deadlines (`pressed_states`)."""
    return st.one_of(strategies.states(), strategies.queued_states(), strategies.pressed_states())


def check_decisions(policy: Policy[Any], steps: Sequence[Step]) -> Any:
    """Plan on each state in turn from `policy.init()`, each plan held by `check_step`, and
    observe its latency (`check_observe`); the policy state after the last."""
    pstate = policy.init()
    for state, latency in steps:
        plan, pstate = check_step(policy, pstate, state)
        pstate = check_observe(policy, pstate, state, plan, latency)
    return pstate


def check_step(policy: Policy[Any], pstate: Any, state: SchedulerState) -> tuple[BatchPlan, Any]:
    """`policy.plan(pstate, state)` held to purity, the token budget, the plan invariants,
    determinism (asked twice) and its name; the plan and the policy state after it."""
    name = str(policy.name)
    before = _state_value(state), _value(pstate)
    plan, after = policy.plan(pstate, state)
    _check_pure(name, "plan", before, state, pstate)
    if not isinstance(plan, BatchPlan):
        detail = f"plan must return (BatchPlan, pstate), got a {type(plan).__name__}"
        raise PolicyCheckError(name, Property.INVARIANTS, detail)
    violations = check_plan(state, plan, token_budget=int(policy.token_budget))
    if violations:
        broken = _broken(violations)
        raise PolicyCheckError(name, broken, "; ".join(str(v) for v in violations))
    if plan.policy != name:
        detail = f"its plan names policy {plan.policy!r}: every plan names the policy that made it"
        raise PolicyCheckError(name, Property.NAME, detail)
    again, after_again = policy.plan(pstate, state)
    if repr(again) != repr(plan):
        detail = f"invariant 8: the same (pstate, state) gave two plans: {plan!r}, then {again!r}"
        raise PolicyCheckError(name, Property.DETERMINISM, detail)
    if not _same(after, after_again):
        detail = (
            "invariant 8: the same (pstate, state) gave two policy states: "
            f"{after!r}, then {after_again!r}"
        )
        raise PolicyCheckError(name, Property.DETERMINISM, detail)
    return plan, after


def check_observe(
    policy: Policy[Any], pstate: Any, state: SchedulerState, plan: BatchPlan, latency: float
) -> Any:
    """`policy.observe(pstate, state, plan, latency)` held to purity; the policy state after."""
    before = _state_value(state), _value(pstate)
    plan_before = repr(plan)
    after = policy.observe(pstate, state, plan, latency)
    _check_pure(str(policy.name), "observe", before, state, pstate)
    if repr(plan) != plan_before:
        detail = "observe changed the plan it was given"
        raise PolicyCheckError(str(policy.name), Property.PURITY, detail)
    return after


def check_run(policy: Policy[Any], requests: int = 60, seed: int = 0) -> RunOutput:
    """Simulate `policy` on `requests` requests of mixed-v1 arriving at 2 req/s (Poisson,
    `seed`) on the default hardware, every plan checked (the engine's strict mode): every
    request must be served and no plan may break an invariant."""
    name = str(policy.name)
    workload = make_workload("mixed-v1", requests, Poisson(2.0), seed)
    try:
        output = simulate(policy, workload, default_hardware(), seed, EngineOptions(strict=True))
    except PlanViolationError as error:
        raise PolicyCheckError(name, Property.RUN, str(error)) from error
    if output.stalled:
        detail = (
            f"stalled at t={output.end:.6f}s: {output.metrics.completed} of {requests} "
            "requests were served and its plans ran nothing more"
        )
        raise PolicyCheckError(name, Property.RUN, detail)
    return output


def _check_declared(policy: Policy[Any]) -> None:
    """A name (a str) and a token budget (an int ≥ 1), as every policy declares them."""
    name = getattr(policy, "name", None)
    if not isinstance(name, str) or not name:
        detail = f"a policy has a name, a non-empty str, got {name!r}"
        raise PolicyCheckError(str(name), Property.NAME, detail)
    budget = getattr(policy, "token_budget", None)
    if type(budget) is not int or budget < 1:
        detail = f"token_budget must be an int >= 1, got {budget!r}"
        raise PolicyCheckError(name, Property.BUDGET, detail)


def _broken(violations: Sequence[Violation]) -> Property:
    """The token budget when a plan holds more tokens than it, else the plan invariants."""
    if any(v.invariant == BUDGET_INVARIANT for v in violations):
        return Property.BUDGET
    return Property.INVARIANTS


def _check_pure(
    name: str, method: str, before: tuple[Any, Any], state: SchedulerState, pstate: Any
) -> None:
    """`method` left `state` and `pstate` as they were `before` it ran."""
    if _state_value(state) != before[0]:
        detail = f"{method} changed the state it was given"
        raise PolicyCheckError(name, Property.PURITY, detail)
    if _value(pstate) != before[1]:
        detail = (
            f"{method} changed the policy state it was given: return a new one instead "
            "(what a policy remembers lives in the state it returns)"
        )
        raise PolicyCheckError(name, Property.PURITY, detail)


def _state_value(state: SchedulerState) -> tuple[Any, ...]:
    """Every field of `state` and of its requests, as values: what a policy may not change."""
    fields = attrs.astuple
    return (
        state.now,
        state.prefill_throughput,
        state.kv_free_tokens,
        tuple(fields(r, recurse=False) for r in state.requests),
        tuple(fields(r, recurse=False) for r in state.decoding),
        tuple(fields(r, recurse=False) for r in state.prefill_candidates),
    )


def _value(pstate: Any) -> bytes | str:
    """`pstate` as a value that changes when it does: its pickle, or else its repr."""
    try:
        return pickle.dumps(pstate)
    except Exception:
        return repr(pstate)


def _same(first: Any, second: Any) -> bool:
    """Whether two policy states made from the same inputs are the same, as far as can be
    told: by their repr when it shows their contents, else by their `==` when the type
    defines one; a state that shows neither cannot be told apart and passes."""
    if first is second:
        return True
    shown = repr(first)
    if " at 0x" not in shown:
        return shown == repr(second)
    if type(first).__eq__ is vars(object)["__eq__"]:
        return True
    try:
        return bool(first == second)
    except Exception:
        return True
