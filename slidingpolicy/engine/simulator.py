"""The offline engine: iteration-level, event-driven simulation of one policy on one workload.

Each iteration: admit the requests that have arrived; take a snapshot (`SchedulerState`); ask
the policy for a plan; check it (`check_plan`, when strict); run it on the hardware model (its
latency times the model's seeded log-normal noise, drawn from the run's generator); apply it;
let the policy observe the measured latency. When nothing is live the clock jumps to the next
arrival.

Engine state lives in columns indexed by request (workload order): Python lists for what an
iteration touches per request (a handful of requests; lists are several times cheaper than
numpy there), numpy where a whole run or the whole workload is computed at once. The `Request`
records a policy sees are built once per request and rebuilt only for the requests an iteration
changed, and the snapshot is updated, not rebuilt: the decodes by index and the others in a
`CandidateQueue` (`table.RequestTable`), so that an iteration costs what it changed and not
what is live, however long the queue grows.

The choices the paper leaves to the engine (throughput, KV memory, re-entry after preemption,
decode-only runs in closed form, when a run ends) are set out in docs/engine.md, "The
engine's assumptions".
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np

from slidingpolicy.engine.decode_run import run_times
from slidingpolicy.engine.observation import decode_iterations, observe_decode_run
from slidingpolicy.engine.run_types import (
    EngineOptions,
    Probe,
    RunOutput,
    StateHook,
    StepHook,
)
from slidingpolicy.engine.stepping import Stepping
from slidingpolicy.engine.timeline import Timeline
from slidingpolicy.hardware import HardwareModel
from slidingpolicy.records.request import Request
from slidingpolicy.step_trace import DECODE_RUN, TraceStep
from slidingpolicy.workloads import Workload


def simulate(
    policy: Any,
    workload: Workload,
    hardware: HardwareModel,
    seed: int,
    options: EngineOptions | None = None,
    on_plan: StateHook | None = None,
    progress: Callable[[int], None] | None = None,
    probe: Probe | None = None,
    on_step: StepHook | None = None,
    timeline: Timeline | None = None,
) -> RunOutput:
    """Run `policy` on `workload` over `hardware`; noise from a generator seeded by `seed`.
    A `timeline` is told every iteration (`engine.timeline`); it changes nothing else."""
    run = _Run(policy, workload, hardware, seed, options or EngineOptions(), on_plan)
    run.probe = probe
    run.on_step = on_step
    run.timeline = timeline
    return run.run(progress)


class _Run(Stepping):
    """One simulation: the loop, one step (`Stepping`), one closed-form decode run."""

    # --- main loop -----------------------------------------------------------------------

    def run(self, progress: Callable[[int], None] | None) -> RunOutput:
        """Run to the end (module doc), reporting each newly completed request to `progress`."""
        started = time.perf_counter()
        pstate = self.policy.init()
        budget = int(self.policy.token_budget)
        table = self.table
        reported = 0
        stopped = False
        while True:
            if self._over_miss_budget():
                stopped = True
                break
            table.admit_arrivals(self.now)
            if not table.live:
                if table.next_arrival >= table.n:
                    break
                self.now = max(self.now, table.next_arrival_time())
                continue
            if self.options.closed_form and table.not_decoding == 0 and len(table.live) <= budget:
                advanced, pstate = self._decode_run(pstate)
                if advanced:
                    continue
            pstate, progressed = self._step(pstate, budget)
            if not progressed:
                if table.next_arrival < table.n:
                    self.now = max(self.now, table.next_arrival_time())
                    continue
                self.stalled = True
                break
            if progress is not None:
                done = table.next_arrival - len(table.live)
                if done > reported:
                    progress(done - reported)
                    reported = done
        return self._output(pstate, stopped, time.perf_counter() - started)

    # --- closed form ---------------------------------------------------------------------

    def _decode_run(self, pstate: Any) -> tuple[bool, Any]:
        """Advance a decode-only run up to the next event at once; False if none fits."""
        table, kv, live = self.table, self.kv, list(self.table.live)
        generated, output = self.log.counts, table.output_tokens
        limit = min(min([output[i] - generated[i] for i in live]), self.options.max_run)
        steps = kv.decode_run_length(live, limit)
        if steps == 0:
            return False, pstate
        prefilled, base = table.prefilled, table.base
        context = sum([prefilled[i] + generated[i] - base[i] for i in live])
        times, latencies = run_times(
            self.hardware,
            self.normals,
            self.now,
            len(live),
            context,
            steps,
            table.next_arrival_time(),
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
        observed = observe_decode_run(
            self.policy, pstate, decodes, latencies, start, self.throughput, free
        )
        return True, observed

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
        budget = int(self.policy.token_budget)
        iterations = decode_iterations(decodes, latencies, start, self.throughput, free)
        for (state, plan), latency in zip(iterations, latencies, strict=True):
            on_step(TraceStep(state, None, budget, plan.allocations, DECODE_RUN, latency))
