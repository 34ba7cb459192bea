"""What the engine does at one of its events: admit the requests that have arrived, then run
one iteration (`Stepping`) or a decode-only run in closed form up to the next event, or find
nothing to run. The single run's loop (`simulator`) and each replica of a cluster
(`slidingpolicy.cluster`) are made of these events."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any, cast

import numpy as np

from slidingpolicy.engine.bookkeeping import RunParts
from slidingpolicy.engine.decode_run import run_times
from slidingpolicy.engine.observation import decode_iterations, observe_decode_run
from slidingpolicy.engine.run_types import EngineOptions, StateHook, StepHook
from slidingpolicy.engine.stepping import Stepping
from slidingpolicy.hardware import HardwareModel
from slidingpolicy.records.request import Request
from slidingpolicy.step_trace import DECODE_RUN, TraceStep


class Event(enum.Enum):
    """What one event did."""

    IDLE = "nothing is live: wait for an arrival"
    WAITING = "live requests, none can run (nor be preempted): wait for an arrival"
    RAN = "a decode-only run advanced in closed form"
    STEPPED = "one iteration planned and run"


class Advancing(Stepping):
    """A simulation that advances event by event, with the policy's state it keeps."""

    def __init__(
        self,
        policy: Any,
        hardware: HardwareModel,
        options: EngineOptions,
        on_plan: StateHook | None,
        parts: RunParts,
    ) -> None:
        super().__init__(policy, hardware, options, on_plan, parts)
        self.pstate: Any = policy.init()
        self.budget = int(policy.token_budget)

    def next_event(self) -> float:
        """When the next request may arrive, once those that have are admitted: where a
        decode-only run ends (`event`)."""
        return self.table.next_arrival_time()

    def event(self) -> Event:
        """Admit what has arrived by now and run what can run: a decode-only run (ending at
        the first iteration that ends at or after `next_event`), or one planned iteration."""
        table = self.table
        table.admit_arrivals(self.now)
        if not table.live:
            return Event.IDLE
        if (
            self.options.closed_form
            and table.not_decoding == 0
            and len(table.live) <= self.budget
            and self._decode_run(self.next_event())
        ):
            return Event.RAN
        self.pstate, progressed = self._step(self.pstate, self.budget)
        return Event.STEPPED if progressed else Event.WAITING

    def _decode_run(self, next_event: float) -> bool:
        """Advance a decode-only run up to `next_event` at once; False if none fits."""
        table, kv, live = self.table, self.kv, list(self.table.live)
        generated, output = self.log.counts, table.output_tokens
        limit = min(min([output[i] - generated[i] for i in live]), self.options.max_run)
        steps = kv.decode_run_length(live, limit)
        if steps == 0:
            return False
        prefilled, base = table.prefilled, table.base
        context = sum([prefilled[i] + generated[i] - base[i] for i in live])
        times, latencies = run_times(
            self.hardware, self.normals, self.now, len(live), context, steps, next_event
        )
        ran = len(times)
        decodes = cast("tuple[Request, ...]", tuple([table.records[i] for i in live]))
        traced = self.on_step is not None
        free = None if self.observes_runs and not traced else kv.free_tokens_over_run(live, ran)
        kv.write(live, [ran] * len(live))
        if self.timeline is not None:
            self.timeline.decode_run(self.now, times, live, [generated[i] for i in live])
        self.log.record_run(live, np.array(times))
        start, self.now = self.now, times[-1]
        if self.probe is not None:
            indices = np.array(live, dtype=np.int64)
            counts = np.full(indices.size, ran, dtype=np.int64)
            self.probe(self.now, kv.used_blocks, kv.total_blocks, indices, counts)
        self.tally.iterations += ran
        self.tally.decode_runs += 1
        self.tally.run_iterations += ran
        self._retire_and_refresh(live, decodes=True)
        if self.on_step is not None:
            self._trace_decode_run(self.on_step, decodes, latencies, start, free)
        self.pstate = observe_decode_run(
            self.policy, self.pstate, decodes, latencies, start, self.throughput, free
        )
        return True

    def _trace_decode_run(
        self,
        on_step: StepHook,
        decodes: tuple[Request, ...],
        latencies: list[float],
        start: float,
        free: Sequence[int | None] | None,
    ) -> None:
        """Pass each iteration of a decode-only run to `on_step` as stepping would have seen
        it, with no plan: the engine ran the only valid one (`step_trace.DECODE_RUN`)."""
        iterations = decode_iterations(decodes, latencies, start, self.throughput, free)
        for (state, plan), latency in zip(iterations, latencies, strict=True):
            on_step(TraceStep(state, None, self.budget, plan.allocations, DECODE_RUN, latency))
