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
from collections.abc import Callable
from typing import Any

from slidingpolicy.engine.advance import Advancing, Event
from slidingpolicy.engine.bookkeeping import of_workload
from slidingpolicy.engine.run_types import EngineOptions, Probe, RunOutput, StateHook, StepHook
from slidingpolicy.engine.timeline import Timeline
from slidingpolicy.hardware import HardwareModel
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


class _Run(Advancing):
    """One simulation of a workload: its events (`Advancing`) in a loop."""

    def __init__(
        self,
        policy: Any,
        workload: Workload,
        hardware: HardwareModel,
        seed: int,
        options: EngineOptions,
        on_plan: StateHook | None,
    ) -> None:
        super().__init__(policy, hardware, options, on_plan, of_workload(workload, seed))

    def run(self, progress: Callable[[int], None] | None) -> RunOutput:
        """Run until every counted request has finished, or every counted deadline has passed
        (the rest have then missed), reporting each newly finished one to `progress`; when
        nothing can run, the clock jumps to the next arrival."""
        started = time.perf_counter()
        table = self.table
        reported = 0
        stopped = False
        while self.counted_left and self.now <= self.horizon:
            if self._over_miss_budget():
                stopped = True
                break
            event = self.event()
            if event is Event.IDLE or event is Event.WAITING:
                if table.next_arrival >= table.n:
                    self.stalled = event is Event.WAITING
                    break
                self.now = max(self.now, table.next_arrival_time())
                continue
            if progress is not None and event is Event.STEPPED:
                done = self.counted.total - self.counted.left
                if done > reported:
                    progress(done - reported)
                    reported = done
        return self._output(self.pstate, stopped, time.perf_counter() - started)
