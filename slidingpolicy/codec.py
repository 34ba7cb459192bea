"""JSON ↔ records: scheduler states and plans, for logs of (state, plan) pairs and `check`.

One log line is a JSON object {"state": ..., "plan": ..., "token_budget": int | null}. Any
engine can write one (field names follow the records); `slidingpolicy check` reads it back.
Diagnostics that do not apply are null; `token_budget` must be present (null: the engine has
none, and invariant 4 is not checked); `plan` may be null for a step the engine scheduled
without a plan (`check` counts and skips it); other keys are ignored. docs/checker.md
describes every field.

A plan names its `branch` and its `policy`. Lines written before it did name one `path`
instead, a branch of SlidingServe or a baseline's name (`LEGACY_PATHS`); they still parse.
"""

from __future__ import annotations

import json
from typing import Any

import attrs

from slidingpolicy._parse import json_problem, parse_json
from slidingpolicy.errors import SlidingPolicyError
from slidingpolicy.records.plan import Allocation, BatchPlan, Diagnostics, PlanBranch
from slidingpolicy.records.request import Request
from slidingpolicy.records.state import SchedulerState


class CodecError(SlidingPolicyError):
    """A JSON document does not describe the record it should; the message names the field."""


LEGACY_PATHS: dict[str, tuple[PlanBranch, str]] = {
    "chunker": (PlanBranch.CHUNKER, ""),
    "constructor": (PlanBranch.CONSTRUCTOR, ""),
    "idle": (PlanBranch.IDLE, ""),
    **{name: (PlanBranch.WHOLE, name) for name in ("vllm", "sarathi", "sarathi-edf", "qoserve")},
}
"""The (branch, policy) of each `path` a plan of an older line holds: SlidingServe's branches,
whose variant the line did not name (policy ""), and the baselines, each the whole plan."""


def request_to_dict(request: Request) -> dict[str, Any]:
    """A request's fields."""
    return {
        "id": request.id,
        "arrival": request.arrival,
        "prompt_tokens": request.prompt_tokens,
        "prefilled": request.prefilled,
        "generated": request.generated,
        "ttft_slo": request.ttft_slo,
        "tbt_slo": request.tbt_slo,
        "protected": request.protected,
        "max_new_tokens": request.max_new_tokens,
    }


def state_to_dict(state: SchedulerState) -> dict[str, Any]:
    """A snapshot's fields, requests in state order."""
    return {
        "now": state.now,
        "prefill_throughput": state.prefill_throughput,
        "kv_free_tokens": state.kv_free_tokens,
        "requests": [request_to_dict(r) for r in state.requests],
    }


def plan_to_dict(plan: BatchPlan) -> dict[str, Any]:
    """A plan's fields; allocations as [id, tokens] pairs."""
    d = plan.diagnostics
    return {
        "allocations": [[a.request_id, a.tokens] for a in plan.allocations],
        "branch": plan.branch,
        "policy": plan.policy,
        "prefill_budget": plan.prefill_budget,
        "predicted_latency": plan.predicted_latency,
        "diagnostics": {
            "t_cur": d.t_cur,
            "t_next": d.t_next,
            "budget_sum": d.budget_sum,
            "candidate_latency": d.candidate_latency,
            "risky": list(d.risky),
            "anchor": d.anchor,
            "anchor_slack": d.anchor_slack,
            "repaired": d.repaired,
            "margin": d.margin,
        },
        "preempted": list(plan.preempted),
        "deferred": list(plan.deferred),
        **({"given_up": list(plan.given_up)} if plan.given_up else {}),
    }


def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise CodecError(f"{where}: must be a JSON object, got {type(value).__name__}")
    return value


def _field(data: dict[str, Any], name: str, where: str) -> Any:
    if name not in data:
        raise CodecError(f"{where}: missing field {name!r}")
    return data[name]


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise CodecError(f"{where}: must be a JSON array, got {type(value).__name__}")
    return value


def request_from_dict(data: Any, where: str = "request") -> Request:
    """The `Request` a dict describes (the record validates its values)."""
    fields = _object(data, where)
    known = {f.name for f in attrs.fields(Request) if f.init}
    unknown = sorted(set(fields) - known)
    if unknown:
        raise CodecError(f"{where}: unknown fields {unknown}")
    try:
        return Request(**fields)
    except TypeError as error:
        raise CodecError(f"{where}: {error}") from None


def state_from_dict(data: Any, where: str = "state") -> SchedulerState:
    """The `SchedulerState` a dict describes."""
    fields = _object(data, where)
    requests = _list(_field(fields, "requests", where), f"{where}.requests")
    return SchedulerState(
        now=_field(fields, "now", where),
        requests=tuple(
            request_from_dict(r, f"{where}.requests[{i}]") for i, r in enumerate(requests)
        ),
        prefill_throughput=_field(fields, "prefill_throughput", where),
        kv_free_tokens=fields.get("kv_free_tokens"),
    )


def plan_from_dict(data: Any, where: str = "plan") -> BatchPlan:
    """The `BatchPlan` a dict describes."""
    fields = _object(data, where)
    allocations = []
    for i, pair in enumerate(_list(_field(fields, "allocations", where), f"{where}.allocations")):
        if not isinstance(pair, list) or len(pair) != 2:
            raise CodecError(f"{where}.allocations[{i}]: must be [request_id, tokens]")
        allocations.append(Allocation(pair[0], pair[1]))
    raw = _object(fields.get("diagnostics", {}), f"{where}.diagnostics")
    if "risky" in raw:
        raw = {**raw, "risky": tuple(_list(raw["risky"], f"{where}.diagnostics.risky"))}
    try:
        diagnostics = Diagnostics(**raw)
    except TypeError as error:
        raise CodecError(f"{where}.diagnostics: {error}") from None
    branch, policy = _branch_and_policy(fields, where)
    return BatchPlan(
        allocations=tuple(allocations),
        branch=branch,
        policy=policy,
        prefill_budget=_field(fields, "prefill_budget", where),
        predicted_latency=_field(fields, "predicted_latency", where),
        diagnostics=diagnostics,
        preempted=tuple(_list(fields.get("preempted", []), f"{where}.preempted")),
        deferred=tuple(_list(fields.get("deferred", []), f"{where}.deferred")),
        given_up=tuple(_list(fields.get("given_up", []), f"{where}.given_up")),
    )


def _branch_and_policy(fields: dict[str, Any], where: str) -> tuple[Any, Any]:
    """A plan's branch and policy: its own fields (the policy "" when absent), or what an older
    line's `path` stands for (`LEGACY_PATHS`)."""
    if "branch" in fields or "path" not in fields:
        return _field(fields, "branch", where), fields.get("policy", "")
    path = fields["path"]
    legacy = LEGACY_PATHS.get(path) if isinstance(path, str) else None
    if legacy is None:
        raise CodecError(f"{where}: path={path!r} is not one of {', '.join(LEGACY_PATHS)}")
    return legacy


def log_line(state: SchedulerState, plan: BatchPlan, token_budget: int | None) -> str:
    """One JSONL line of a (state, plan) log."""
    document = {
        "state": state_to_dict(state),
        "plan": plan_to_dict(plan),
        "token_budget": token_budget,
    }
    return json.dumps(document, sort_keys=True)


def line_fields(text: str) -> dict[str, Any]:
    """A log line's JSON object; CodecError when it is not one."""
    try:
        document = parse_json(text)
    except ValueError as error:
        raise CodecError(json_problem(error)) from None
    return _object(document, "line")


def step_from_fields(
    fields: dict[str, Any],
) -> tuple[SchedulerState, BatchPlan | None, int | None]:
    """The state, plan (None when null) and token budget of a line's object (`line_fields`);
    other keys are not read."""
    budget = _field(fields, "token_budget", "line")
    if budget is not None and (type(budget) is not int or budget < 1):
        raise CodecError(f"token_budget: must be an int >= 1 or null, got {budget!r}")
    state = state_from_dict(_field(fields, "state", "line"))
    plan = _field(fields, "plan", "line")
    return state, None if plan is None else plan_from_dict(plan), budget


def parse_step(text: str) -> tuple[SchedulerState, BatchPlan | None, int | None]:
    """A log line back into its state, plan and token budget, the plan None when the line's
    is null (a step the engine scheduled without one); CodecError or InvalidRecordError (both
    SlidingPolicyError) when malformed. Keys beyond these three are ignored (a step trace's
    are read by `slidingpolicy.step_trace`)."""
    return step_from_fields(line_fields(text))


def parse_line(text: str) -> tuple[SchedulerState, BatchPlan, int | None]:
    """`parse_step` of a line that must hold a plan (CodecError when its plan is null)."""
    state, plan, budget = parse_step(text)
    if plan is None:
        raise CodecError("plan: must be a JSON object, got null")
    return state, plan, budget
