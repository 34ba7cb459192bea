"""Checks at the door of the library's public functions and policy methods, for arguments
that are not records (records check themselves): each raises `InvalidRecordError` naming the
function or policy, and the argument."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from slidingpolicy import _validate
from slidingpolicy.records.plan import BatchPlan
from slidingpolicy.records.request import Request
from slidingpolicy.records.state import SchedulerState


def _sequence(where: str, field: str, values: object) -> Sequence[object]:
    if isinstance(values, np.ndarray):
        return list(values)
    if isinstance(values, str | bytes) or not isinstance(values, Sequence):
        raise _validate.fail(where, field, f"must be a sequence, got {type(values).__name__}")
    return values


def requests(
    where: str, field: str, values: object, decoding: bool | None = None
) -> Sequence[object]:
    """A sequence of `Request`s: all decoding (`decoding` True), all waiting or prefilling
    (False), or either (None)."""
    sequence = _sequence(where, field, values)
    for j, request in enumerate(sequence):
        if not isinstance(request, Request):
            raise _validate.fail(
                where, f"{field}[{j}]", f"must be a Request, got {type(request).__name__}"
            )
        if decoding is not None and request.is_decoding != decoding:
            phase = request.phase.value
            wanted = "decoding" if decoding else "waiting or prefilling"
            raise _validate.fail(
                where, f"{field}[{j}]", f"is {request.id!r}, {phase}, not {wanted}"
            )
    return sequence


def decode_run(where: str, decodes: object, latencies: object) -> None:
    """What `observe_decodes` is told: the decoding requests, and the seconds each decode-only
    iteration took (any number of them, each giving every decode one token; none without a
    decode to run)."""
    running = requests(where, "decodes", decodes, decoding=True)
    values = np.asarray(_sequence(where, "latencies", latencies))
    if values.size == 0:
        return
    if values.ndim != 1 or values.dtype.kind not in "fiu":
        raise _validate.fail(where, "latencies", "must be a sequence of seconds")
    if len(running) == 0:
        raise _validate.fail(
            where,
            "latencies",
            f"holds {values.size} decode-only iterations, but there is no decode to run",
        )
    wrong = ~((values >= 0.0) & (values <= _validate.MAX_SECONDS))
    if wrong.any():
        j = int(np.argmax(wrong))
        _validate.seconds(where, f"latencies[{j}]", float(values[j]))


def observation(
    policy: str, pstate: object, kind: type, state: object, plan: object, latency: object
) -> float:
    """What `observe` is told: the policy's own state (a `kind`), the state and plan of the
    iteration, and its latency in seconds, which it returns as a float."""
    _validate.instance(f"policy {policy!r}", "pstate", pstate, kind)
    _validate.instance("observation", "state", state, SchedulerState)
    _validate.instance("observation", "plan", plan, BatchPlan)
    return _validate.seconds("observation", "latency", latency)


def margin(where: str, value: object) -> float:
    """A latency margin m ≥ 1 (a prediction is compared with a deadline as T̂·m)."""
    number = _validate.finite(where, "margin", value)
    if number < 1.0:
        raise _validate.fail(
            where, "margin", f"={number} must be >= 1 (T̂·m < T̂ would pass plans that break)"
        )
    return number
