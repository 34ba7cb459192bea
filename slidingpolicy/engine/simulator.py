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

import math
import time
from array import array
from collections.abc import Callable, Sequence
from typing import Any, cast

import attrs
import numpy as np
from numpy.typing import NDArray

from slidingpolicy import _validate
from slidingpolicy.engine.decode_run import run_times
from slidingpolicy.engine.kv import KVCache, blocks_for
from slidingpolicy.engine.memory import fit_kv
from slidingpolicy.engine.noise import Normals, engine_rng
from slidingpolicy.engine.observation import decode_iterations, observe_decode_run
from slidingpolicy.engine.run_errors import EngineError, PlanViolationError
from slidingpolicy.engine.table import RequestTable
from slidingpolicy.engine.timeline import Timeline
from slidingpolicy.engine.trusted import trusted_state
from slidingpolicy.errors import InvalidRecordError
from slidingpolicy.hardware import HardwareModel
from slidingpolicy.invariants import check_plan
from slidingpolicy.metrics import Metrics, RequestOutcome, TokenLog, outcome, summarize
from slidingpolicy.policy import DecodeRunObserver
from slidingpolicy.pricing.throughput import THROUGHPUT_MEMORY, next_throughput
from slidingpolicy.records.plan import Allocation, BatchPlan
from slidingpolicy.records.request import Request, next_token_deadline
from slidingpolicy.records.state import SchedulerState, queued_state
from slidingpolicy.step_trace import DECODE_RUN, TraceStep
from slidingpolicy.workloads import Workload

__all__ = [
    "EngineError",
    "EngineOptions",
    "EngineStats",
    "PlanViolationError",
    "Probe",
    "RunOutput",
    "StateHook",
    "StepHook",
    "engine_rng",
    "simulate",
]

IntArray = NDArray[np.int64]

THROUGHPUT_PROBE_TOKENS = 512


@attrs.frozen(slots=True)
class EngineOptions:
    """How the engine runs (not what it simulates).

    - `strict`: check every plan with `check_plan` and raise `PlanViolationError` on any
      violation (on in the tests).
    - `closed_form`: advance decode-only runs at once (identical results; off = step them).
    - `kv_capacity_tokens`: override the hardware's KV capacity (e.g. to study memory pressure).
    - `throughput_memory`: weight of the past in the prefill throughput average ρ_t.
    - `max_run`: the most iterations one closed-form run advances at once (bounds memory).
    - `miss_budget`: stop the run early once more requests than this have certainly missed
      their SLO (a token came late, or a deadline passed before its token); the capacity
      search sets it to what 99% attainment allows, as the outcome is then known.
    """

    strict: bool = False
    closed_form: bool = True
    kv_capacity_tokens: int | None = None
    throughput_memory: float = THROUGHPUT_MEMORY
    max_run: int = 4096
    miss_budget: int | None = None

    def __attrs_post_init__(self) -> None:
        record = "engine options"
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


class Tally:
    """What the engine counts as it runs: iterations, decisions, closed-form runs, the policy's
    CPU time per decision, and the predictor's error where an iteration ran prefill tokens."""

    def __init__(self) -> None:
        self.iterations = 0
        self.decisions = 0
        self.decode_runs = 0
        self.run_iterations = 0
        self.cpu = array("d")
        """The policy's CPU seconds per decision, 8 bytes each."""
        self.pred_abs = 0.0
        self.pred_signed = 0.0
        self.pred_count = 0

    def prediction(self, predicted: float, measured: float) -> None:
        """Count the error of one predicted latency."""
        error = predicted - measured
        self.pred_abs += abs(error)
        self.pred_signed += error
        self.pred_count += 1

    def errors(self) -> tuple[float, float, int]:
        """Σ|error|, Σ error and their count, as `summarize` takes them."""
        return self.pred_abs, self.pred_signed, self.pred_count

    def stats(self, wall: float) -> EngineStats:
        """The engine figures of a run that took `wall` seconds."""
        cpu = np.frombuffer(self.cpu, dtype=np.float64)
        return EngineStats(
            decisions=self.decisions,
            decode_runs=self.decode_runs,
            run_iterations=self.run_iterations,
            wall_seconds=wall,
            policy_cpu_seconds=float(cpu.sum()),
            policy_cpu_p50=float(np.percentile(cpu, 50)) if cpu.size else math.nan,
            policy_cpu_p99=float(np.percentile(cpu, 99)) if cpu.size else math.nan,
        )


def kv_cache(table: RequestTable, hardware: HardwareModel, options: EngineOptions) -> KVCache:
    """The run's KV cache; InvalidRecordError naming the first request that could never fit."""
    capacity = options.kv_capacity_tokens or hardware.kv_capacity_tokens
    kv = KVCache(capacity, hardware.kv_block_size, table.n)
    need = table.columns.prompt + table.columns.output
    too_big = np.flatnonzero(need > kv.capacity_tokens)
    if too_big.size:
        i = int(too_big[0])
        raise InvalidRecordError(
            f"request {table.ids[i]!r}",
            "prompt_tokens",
            f"+ output = {int(need[i])} tokens exceed the KV capacity "
            f"{kv.capacity_tokens}: it could never run",
        )
    return kv


def initial_throughput(hardware: HardwareModel) -> float:
    """ρ_t before any prefill: the noise-free rate on one 512-token prompt (module doc)."""
    probe = np.array([THROUGHPUT_PROBE_TOKENS], dtype=np.int64)
    return THROUGHPUT_PROBE_TOKENS / hardware.latency(probe, np.zeros(1, np.int64))


class _Run:
    """One simulation: the loop, one step, one closed-form decode run (engine-only state)."""

    def __init__(
        self,
        policy: Any,
        workload: Workload,
        hardware: HardwareModel,
        seed: int,
        options: EngineOptions,
        on_plan: StateHook | None,
    ) -> None:
        self.policy = policy
        self.observes_runs = isinstance(policy, DecodeRunObserver)
        self.hardware = hardware
        self.options = options
        self.on_plan = on_plan
        self.probe: Probe | None = None
        self.on_step: StepHook | None = None
        self.timeline: Timeline | None = None
        self.normals = Normals(engine_rng(seed))
        self.noise = hardware.with_noise
        columns = workload.columns()
        self.log = TokenLog(columns)
        self.table = RequestTable([r.id for r in workload.requests], columns, self.log)
        self.kv = kv_cache(self.table, hardware, options)
        self.now = 0.0
        self.throughput = initial_throughput(hardware)
        self.tally = Tally()
        self.stalled = False
        self._next_miss_check = 0

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

    def _output(self, pstate: Any, stopped: bool, wall: float) -> RunOutput:
        tally = self.tally
        metrics = summarize(self.log, self.now, tally.iterations, tally.errors())
        return RunOutput(
            metrics,
            outcome(self.log),
            self.now,
            self.stalled,
            tally.stats(wall),
            stopped,
            self.kv.used_blocks,
            pstate,
        )

    def _over_miss_budget(self) -> bool:
        """Whether more requests than `miss_budget` have certainly missed (checked every 32
        iterations)."""
        budget = self.options.miss_budget
        if budget is None or self.tally.iterations < self._next_miss_check:
            return False
        self._next_miss_check = self.tally.iterations + 32
        return self._certain_misses() > budget

    def _certain_misses(self) -> int:
        """Requests that have missed for sure: a late token, a passed deadline unserved, or
        given up."""
        # The arrived requests that have not completed are the live ones; a completed one
        # missed iff one of its tokens was late (counted by the log as it happens).
        log, table, now = self.log, self.table, self.now
        late, generated = log.late, log.counts
        arrival, ttft, tbt, due = table.arrival, table.ttft, table.tbt, next_token_deadline
        due_passed = 0
        for i in table.live:
            if late[i] <= 0.0 and due(arrival[i], ttft[i], tbt[i], generated[i]) < now:
                due_passed += 1
        return log.late_count + log.given_up_unlate + due_passed

    # --- one iteration -------------------------------------------------------------------

    def snapshot(self) -> SchedulerState:
        """The state a policy decides on now: every live request the cache can serve — each
        admitted one, and each waiting one whose whole prompt fits in the free blocks — and
        `KVCache.free_tokens` of the requests holding KV. Trusted: the engine keeps its
        records valid, unique by workload id and arrived by `now` (`tests/engine` checks it
        against the definition). With many live requests it is updated, not rebuilt: the
        decodes and the table's queue shown with the free blocks as its `fit`."""
        table, kv = self.table, self.kv
        records, block, free = table.records, kv.block, kv.free_blocks
        queue = table.keep_queue()
        if queue is None:
            prompt, blocks = table.prompt, kv.block_list
            shown = [
                records[i] for i in table.live if blocks[i] or blocks_for(prompt[i], block) <= free
            ]
            return trusted_state(
                self.now,
                tuple(shown),  # type: ignore[arg-type]
                self.throughput,
                kv.free_tokens(kv.holders),
            )
        return queued_state(
            self.now,
            tuple([records[i] for i in table.decoding]),  # type: ignore[misc]
            queue.with_prompt_limit(free * block),
            self.throughput,
            kv.free_tokens(kv.holders),
        )

    def _step(self, pstate: Any, budget: int) -> tuple[Any, bool]:
        """Plan, check, run and apply one iteration; False when it ran nothing and preempted
        nothing (the caller then waits for an arrival)."""
        state = self.snapshot()
        plan, pstate = self._plan(pstate, state, budget)
        name, table = self.policy.name, self.table
        for rid in plan.preempted:
            self._preempt(table.lookup(rid, name, "preempted"))
        for rid in plan.given_up:
            self._give_up(table.lookup(rid, name, "given up"))
        indices, chunks = table.batch(plan, name)
        fitted = fit_kv(self.kv, table.prompt, indices, chunks, self._preempt)
        indices, chunks = fitted.indices, fitted.chunks
        if not indices:
            if self.on_step is not None:
                self.on_step(TraceStep(state, plan, budget, ()))
            return pstate, bool(plan.preempted or plan.given_up) or fitted.preempted
        executed = plan
        if fitted.dropped:
            ids = table.ids
            executed = attrs.evolve(
                plan,
                allocations=tuple(
                    Allocation(ids[i], c) for i, c in zip(indices, chunks, strict=True)
                ),
            )
        begun = self.now
        latency, was_prefill, prefill_tokens = self._execute(indices, chunks)
        if self.on_step is not None:
            self.on_step(TraceStep(state, plan, budget, executed.allocations, None, latency))
        if prefill_tokens:
            self.tally.prediction(plan.predicted_latency, latency)
            self.throughput = next_throughput(
                self.throughput, prefill_tokens, latency, self.options.throughput_memory
            )
        counts = self.log.counts
        before = [counts[i] for i in indices] if self.timeline is not None else []
        self._apply(indices, chunks, was_prefill)
        if self.timeline is not None:
            after = [counts[i] for i in indices]
            produced = [a > b for a, b in zip(after, before, strict=True)]
            self.timeline.batch(
                begun,
                self.now,
                indices,
                chunks,
                was_prefill,
                after,
                produced,
                plan.predicted_latency,
                plan.branch,
            )
        pstate = self.policy.observe(pstate, state, executed, latency)
        return pstate, True

    def _plan(self, pstate: Any, state: SchedulerState, budget: int) -> tuple[BatchPlan, Any]:
        """The policy's plan, timed, checked when strict, and passed to `on_plan`."""
        started = time.process_time()
        plan, pstate = self.policy.plan(pstate, state)
        self.tally.cpu.append(time.process_time() - started)
        self.tally.decisions += 1
        if self.options.strict:
            violations = check_plan(state, plan, token_budget=budget)
            if violations:
                raise PlanViolationError(str(self.policy.name), self.now, violations)
        if self.on_plan is not None:
            self.on_plan(state, plan, budget)
        return plan, pstate

    def _execute(self, indices: list[int], chunks: list[int]) -> tuple[float, list[bool], int]:
        """Run the batch on the hardware; advance the clock by its noisy latency. Returns the
        latency, which allocations were prefill chunks, and their tokens."""
        table = self.table
        prefilled, prompt, base, generated = (
            table.prefilled,
            table.prompt,
            table.base,
            self.log.counts,
        )
        contexts: list[int] = []
        was_prefill: list[bool] = []
        prefill_tokens = 0
        for i, c in zip(indices, chunks, strict=True):
            done = prefilled[i]
            contexts.append(done + generated[i] - base[i])
            if done < prompt[i]:
                was_prefill.append(True)
                prefill_tokens += c
            else:
                was_prefill.append(False)
        self.kv.write(indices, chunks)
        latency = self.noise(self.hardware.latency_of(chunks, contexts), self.normals.take())
        self.now += latency
        self.tally.iterations += 1
        return latency, was_prefill, prefill_tokens

    def _apply(self, indices: list[int], chunks: list[int], was_prefill: list[bool]) -> None:
        """Move prefills on, produce the tokens, retire the finished requests."""
        table = self.table
        prefilled, prompt = table.prefilled, table.prompt
        producing: list[int] = []
        for i, c, prefill in zip(indices, chunks, was_prefill, strict=True):
            if prefill:
                prefilled[i] += c
                if prefilled[i] == prompt[i]:
                    producing.append(i)
                    table.not_decoding -= 1
            else:
                producing.append(i)
        self.log.record(producing, self.now)
        if self.probe is not None:
            produced = np.array(producing, dtype=np.int64)
            ones = np.ones(produced.size, dtype=np.int64)
            self.probe(self.now, self.kv.used_blocks, self.kv.total_blocks, produced, ones)
        self._retire_and_refresh(indices)

    def _retire_and_refresh(self, indices: list[int], decodes: bool = False) -> None:
        for i in self.table.retire_and_refresh(indices, decodes):
            self.kv.release(i)

    def _give_up(self, i: int) -> None:
        """Finish request i unserved, now: the policy gave it up; it counts as missed."""
        self.kv.release(i)
        self.log.give_up(i, self.now)
        self.table.give_up(i)

    def _preempt(self, i: int) -> None:
        """Free request i's KV and send it back to wait, to recompute what it has (module doc)."""
        self.kv.release(i)
        self.log.preempted[i] += 1
        self.table.recompute(i)

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
