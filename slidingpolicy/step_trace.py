"""The step trace: one JSONL line per engine step, the batch that ran beside its measured latency.

A line is the codec's (state, plan) document (`codec`) with three more fields:

    {"state": <state>, "plan": <plan or null>, "token_budget": int | null,
     "scheduled": {request id: tokens the engine ran}, "fallback": null | str,
     "latency": seconds | null}

- `scheduled` is the batch that really ran, which may differ from the plan (an engine drops
  what does not fit); each request's cached context is u_i = prefilled + generated of its
  record in `state` (eq. 4), so the batch is the list of (c_i, u_i) the predictor prices.
- `fallback` says why the engine scheduled the step itself (the vLLM adapter: the policy
  raised, its plan then null, or its plan broke an invariant; the offline engine: a step of a
  decode-only run, whose only valid plan gives every decode one token, its plan null).
- `latency` is the step's measured seconds; null (or absent, as in traces written before it
  was recorded) where it was not measured.

The engine adapters write it (`TraceWriter`), and so does `slidingpolicy simulate --log`;
`check` reads its plans, `fit --trace` and the trace-built hardware model its (batch,
latency) samples. A line without
`scheduled` is a plain (state, plan) log line: `check` reads it, a fit cannot.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

import attrs

from slidingpolicy import _validate
from slidingpolicy._parse import MAX_JSON_LINE, MAX_TOKENS, lines
from slidingpolicy._paths import StrPath
from slidingpolicy.codec import (
    CodecError,
    line_fields,
    plan_to_dict,
    state_to_dict,
    step_from_fields,
)
from slidingpolicy.errors import SlidingPolicyError, TraceFormatError
from slidingpolicy.pricing.samples import Sample
from slidingpolicy.records.plan import Allocation, BatchPlan
from slidingpolicy.records.state import SchedulerState

TRACE_FORMAT = (
    'expected JSONL, one {"state": ..., "plan": ... | null, "token_budget": int | null, '
    '"scheduled": {request id: tokens}, "fallback": null | str, "latency": seconds | null} '
    "per line (docs/checker.md)"
)

DECODE_RUN = "decode-only run"
"""The offline engine's fallback for a step of a decode-only run advanced in closed form."""


@attrs.frozen(slots=True)
class TraceStep:
    """One line of a step trace (module docstring). `scheduled` is None for a plain
    (state, plan) log line, which records no step."""

    state: SchedulerState
    plan: BatchPlan | None
    token_budget: int | None
    scheduled: tuple[Allocation, ...] | None = None
    fallback: str | None = None
    latency: float | None = None

    def __attrs_post_init__(self) -> None:
        record = "trace step"
        if self.token_budget is not None:
            _validate.integer(record, "token_budget", self.token_budget, 1)
        if self.fallback is not None and not isinstance(self.fallback, str):
            raise CodecError(f"fallback: must be null or a str, got {self.fallback!r}")
        if self.latency is not None:
            _validate.non_negative(record, "latency", self.latency)

    def batch(self) -> tuple[list[int], list[int]] | None:
        """The (c_i, u_i) of the batch that ran, contexts from the state (eq. 4); None when a
        scheduled request is not in the state (its context is unknown)."""
        chunks: list[int] = []
        contexts: list[int] = []
        for allocation in self.scheduled or ():
            request = self.state.request(allocation.request_id)
            if request is None:
                return None
            chunks.append(allocation.tokens)
            contexts.append(request.context_tokens)
        return chunks, contexts

    def to_line(self) -> str:
        """The JSONL line (without its newline); `scheduled` in batch order."""
        document = {
            "state": state_to_dict(self.state),
            "plan": None if self.plan is None else plan_to_dict(self.plan),
            "token_budget": self.token_budget,
            "scheduled": {a.request_id: a.tokens for a in self.scheduled or ()},
            "fallback": self.fallback,
            "latency": self.latency,
        }
        return json.dumps(document)


class TraceWriter:
    """An open step trace an engine appends to, one `TraceStep` a line; line-buffered, so
    that an engine that crashes leaves whole lines."""

    def __init__(self, path: StrPath) -> None:
        self._file: TextIO = Path(path).open("a", buffering=1)  # noqa: SIM115 (held open)

    def write(self, step: TraceStep) -> None:
        """Append one step."""
        self._file.write(step.to_line() + "\n")

    def close(self) -> None:
        """Close the file."""
        self._file.close()


def _allocations(value: Any) -> tuple[Allocation, ...]:
    if not isinstance(value, dict):
        raise CodecError(f"scheduled: must be a JSON object of id: tokens, got {value!r:.60}")
    for rid, tokens in value.items():
        if type(tokens) is int and tokens > MAX_TOKENS:
            raise CodecError(f"scheduled[{rid!r}]: {tokens} tokens is above {MAX_TOKENS:.0e}")
    return tuple(Allocation(rid, tokens) for rid, tokens in value.items())


def _latency(value: Any) -> float | None:
    if value is None:
        return None
    if type(value) not in (int, float) or not math.isfinite(value) or value < 0:
        raise CodecError(f"latency: must be null or seconds >= 0, got {value!r:.60}")
    return float(value)


def parse_step(text: str) -> TraceStep:
    """One line of a step trace or of a (state, plan) log (`codec.parse_step` reads the
    latter's fields); CodecError or InvalidRecordError (both SlidingPolicyError) naming the
    field when malformed."""
    fields = line_fields(text)
    state, plan, budget = step_from_fields(fields)
    if "scheduled" not in fields:
        return TraceStep(state, plan, budget)
    return TraceStep(
        state,
        plan,
        budget,
        _allocations(fields["scheduled"]),
        fields.get("fallback"),
        _latency(fields.get("latency")),
    )


SKIP_REASONS = {
    "no_latency": "latency null",
    "nothing_ran": "nothing scheduled",
    "unknown_request": "a scheduled request not in the state",
}
"""Why a well-formed step gives no sample, as `TraceSamples.skipped` counts it."""


@attrs.frozen(slots=True)
class TraceSamples:
    """The (batch, latency) samples of step traces, in file and line order, and the steps
    that gave none, counted by reason (`SKIP_REASONS`)."""

    samples: tuple[Sample, ...]
    skipped: Counter[str]
    steps: int

    def describe_skipped(self) -> str:
        """'N steps skipped (k latency null, ...)', or '' when none was."""
        total = sum(self.skipped.values())
        if not total:
            return ""
        parts = ", ".join(f"{n} {SKIP_REASONS[k]}" for k, n in sorted(self.skipped.items()))
        return f"{total} of {self.steps} steps skipped ({parts})"


def step_sample(step: TraceStep) -> Sample | str:
    """The step's (batch, latency) sample, or the key of `SKIP_REASONS` it gives none for."""
    if step.latency is None:
        return "no_latency"
    if not step.scheduled:
        return "nothing_ran"
    batch = step.batch()
    if batch is None:
        return "unknown_request"
    return Sample(batch[0], batch[1], step.latency)


def read_samples(paths: Sequence[StrPath]) -> TraceSamples:
    """Every sample of the step traces at `paths`; TraceFormatError naming file:line (and the
    format) for a malformed line or a line that is not a step, and for traces with no sample."""
    samples: list[Sample] = []
    skipped: Counter[str] = Counter()
    steps = 0
    for path in paths:
        for number, line in lines(path, TraceFormatError, TRACE_FORMAT, MAX_JSON_LINE):
            if not line.strip():
                continue
            try:
                step = parse_step(line)
                if step.scheduled is None:
                    raise CodecError("a (state, plan) log line, not a step: no scheduled")
                found = step_sample(step)
            except SlidingPolicyError as error:
                raise TraceFormatError(f"{path}:{number}: {error}; {TRACE_FORMAT}") from None
            steps += 1
            if isinstance(found, str):
                skipped[found] += 1
            else:
                samples.append(found)
    names = ", ".join(str(p) for p in paths)
    if not samples:
        reason = TraceSamples((), skipped, steps).describe_skipped() or "no steps"
        raise TraceFormatError(f"{names}: no step with a measured batch ({reason}); {TRACE_FORMAT}")
    return TraceSamples(tuple(samples), skipped, steps)
