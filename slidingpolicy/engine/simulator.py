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
changed; the snapshot is built with `trusted.trusted_state` from those records, which the
engine keeps valid.

Choices the spec leaves to the engine, documented here:

- **Recent prefill throughput** ρ_t (the snapshot's `prefill_throughput`): an exponential
  average, weight `throughput_memory` (0.9) on the past, of prefill tokens per second of each
  iteration that ran prefill tokens; it starts at the hardware's noise-free rate on one
  512-token prompt. Decode-only iterations leave it unchanged.
- **KV memory**: blocks of the hardware's block size (16) out of `kv_capacity_tokens`
  (`kv.KVCache`, which also defines `kv_free_tokens`). New prefill is admitted only where it
  fits: a waiting request is shown to the policy only while its whole prompt fits in the free
  blocks, and is admitted — its prompt's blocks reserved at once, as vLLM's block manager
  does — when the plan first gives it a chunk. A started prefill therefore always finishes;
  only decode growth can overflow. When a plan's decodes need more blocks than are free, the
  engine preempts the newest request holding KV (latest arrival; vLLM's behaviour) and drops
  it from the batch, until they fit; then it admits the plan's waiting requests in plan order
  while their prompts fit, and drops the others. A decode the plan leaves out for KV
  (`BatchPlan.preempted`) is preempted. Every preemption is counted; the policy observes the
  batch that ran.
- **Re-entry after preemption (recompute)**: the request frees its KV and waits again, as a
  request whose prompt is its prompt plus the g tokens it has produced (vLLM recomputes them),
  with `generated` 0 and `ttft_slo` L_ttft + g·L_tbt, so that the deadline the policy sees is
  still eq. 1's deadline of its next token g + 1. The iteration that completes the recompute
  produces token g + 1: no token is produced twice. The engine keeps counting tokens in the
  original request's terms.
- **Decode-only runs in closed form**: when every live request is decoding, all fit the
  policy's token budget and the KV, the only valid plan gives each one token. The engine then
  advances all iterations up to the next event (an arrival, a request finishing, a KV block
  boundary that no longer fits) at once, with the hardware's `decode_latencies`, drawing the
  same noise in the same order: the results are those of stepping (tested byte for byte). The
  policy observes every iteration through `observation.observe_decode_run`: at once where it
  is a `DecodeRunObserver` (which must equal observing each iteration), else one iteration at
  a time, with the state and the plan stepping would have had.
- The output length of a request is the workload's; the policy is not told it
  (`max_new_tokens` is None), as a real server does not know it.
- A run ends when every request has completed, or when nothing can run and nothing more
  arrives (`stalled`; the live requests stay live).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any, cast

import attrs
import numpy as np
from numpy.typing import NDArray

from slidingpolicy import _validate
from slidingpolicy.engine.kv import KVCache, blocks_for
from slidingpolicy.engine.metrics import Metrics, RequestOutcome, TokenLog, outcome, summarize
from slidingpolicy.engine.observation import observe_decode_run
from slidingpolicy.engine.trusted import trusted_request, trusted_state
from slidingpolicy.errors import InvalidRecordError, SlidingPolicyError
from slidingpolicy.hardware import HardwareModel
from slidingpolicy.invariants import Violation, check_plan
from slidingpolicy.policy import DecodeRunObserver
from slidingpolicy.records.plan import Allocation, BatchPlan
from slidingpolicy.records.request import Request, next_token_deadline
from slidingpolicy.records.state import SchedulerState
from slidingpolicy.workloads import Workload

IntArray = NDArray[np.int64]
FloatArray = NDArray[np.float64]

THROUGHPUT_PROBE_TOKENS = 512


class PlanViolationError(SlidingPolicyError):
    """A policy's plan broke invariants in strict mode; the message names policy and invariants."""

    def __init__(self, policy: str, now: float, violations: Sequence[Violation]) -> None:
        listed = "; ".join(str(v) for v in violations)
        super().__init__(f"policy {policy!r} at t={now:.6f}s broke {listed}")
        self.policy = policy
        self.violations = tuple(violations)


class EngineError(SlidingPolicyError):
    """A plan the engine cannot run (unknown id, more tokens than a request has left)."""


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
    throughput_memory: float = 0.9
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
"""Called with each planned (state, plan, token budget), e.g. to write a JSONL log."""

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
) -> RunOutput:
    """Run `policy` on `workload` over `hardware`; noise from a generator seeded by `seed`."""
    run = _Run(policy, workload, hardware, seed, options or EngineOptions(), on_plan)
    run.probe = probe
    return run.run(progress)


def engine_rng(seed: int) -> np.random.Generator:
    """The run's noise generator: its own stream, apart from the workload's."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(0xE,)))


class Normals:
    """The standard normals of a generator, drawn in blocks and handed out in order.

    numpy draws an array of normals one by one from the same stream as single draws, so the
    sequence handed out is exactly that of calling `rng.standard_normal()` each time (tested);
    the noise is then `latency · exp(sigma · z)`, as in `hardware.roofline.noisy`.
    """

    def __init__(self, rng: np.random.Generator, block: int = 1024) -> None:
        self.rng = rng
        self.block = block
        self.buffer: list[float] = []
        self.position = 0

    def take(self) -> float:
        """The next normal."""
        if self.position == len(self.buffer):
            self.buffer = self.rng.standard_normal(self.block).tolist()
            self.position = 0
        z = self.buffer[self.position]
        self.position += 1
        return z

    def peek(self, k: int) -> list[float]:
        """The next `k` normals, without taking them."""
        if self.position + k > len(self.buffer):
            fresh: list[float] = self.rng.standard_normal(max(self.block, k)).tolist()
            self.buffer = self.buffer[self.position :] + fresh
            self.position = 0
        return self.buffer[self.position : self.position + k]

    def skip(self, k: int) -> None:
        """Take `k` normals that `peek` returned."""
        self.position += k


RUN_CHUNK = 32
"""Decode-run iterations priced per batch at first (doubling up to `EngineOptions.max_run`):
a run usually ends at the next arrival, well before the KV or the output lengths end it."""

RUN_SCALAR = 16
"""Decode-run iterations priced one by one first, with the hardware's `decode_pricer` (most
runs are short: numpy's overhead per call would dominate them)."""


class _Run:
    """One simulation's mutable state (engine-only; no policy sees it)."""

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
        self.rng = engine_rng(seed)
        self.normals = Normals(self.rng)
        self.sigma = float(hardware.noise_sigma)
        columns = workload.columns()
        self.columns = columns
        n = len(workload)
        self.n = n
        self.ids = [r.id for r in workload.requests]
        self.index = {rid: i for i, rid in enumerate(self.ids)}
        self.arrival = columns.arrival.tolist()
        self.ttft = columns.ttft.tolist()
        self.admitted_ttft = list(self.ttft)
        """The TTFT SLO of each request's current admission: L_ttft + g·L_tbt after a recompute
        of g tokens, so that its deadline stays eq. 1's deadline of token g + 1."""
        self.tbt = columns.tbt.tolist()
        self.output = columns.output
        capacity = options.kv_capacity_tokens or hardware.kv_capacity_tokens
        self.kv = KVCache(capacity, hardware.kv_block_size, n)
        need = columns.prompt + columns.output
        too_big = np.flatnonzero(need > self.kv.capacity_tokens)
        if too_big.size:
            i = int(too_big[0])
            raise InvalidRecordError(
                f"request {self.ids[i]!r}",
                "prompt_tokens",
                f"+ output = {int(need[i])} tokens exceed the KV capacity "
                f"{self.kv.capacity_tokens}: it could never run",
            )
        self.prompt: list[int] = columns.prompt.tolist()
        self.prefilled: list[int] = [0] * n
        self.base: list[int] = [0] * n
        self.output_tokens: list[int] = columns.output.tolist()
        self.log = TokenLog(columns)
        self.records: list[Request | None] = [None] * n
        self.live: list[int] = []
        self.not_decoding = 0
        self.next_arrival = 0
        self.now = 0.0
        self.iterations = 0
        probe = np.array([THROUGHPUT_PROBE_TOKENS], dtype=np.int64)
        self.throughput = THROUGHPUT_PROBE_TOKENS / hardware.latency(probe, np.zeros(1, np.int64))
        self.pred_abs = 0.0
        self.pred_signed = 0.0
        self.pred_count = 0
        self.decisions = 0
        self.decode_runs = 0
        self.run_iterations = 0
        self.cpu: list[float] = []
        self.stalled = False
        self._next_miss_check = 0
        self.probe: Probe | None = None

    # --- records -------------------------------------------------------------------------

    def _refresh(self, indices: list[int]) -> None:
        """(Re)build the records of live requests `indices` from the columns, in the terms of
        their current admission (after a recompute, `generated` counts from it and `ttft_slo`
        makes the deadline that of its next token, module doc)."""
        records, ids, arrival, prompt = self.records, self.ids, self.arrival, self.prompt
        prefilled, generated, base = self.prefilled, self.log.counts, self.base
        ttft, tbt, build = self.admitted_ttft, self.tbt, trusted_request
        for i in indices:
            records[i] = build(
                ids[i], arrival[i], prompt[i], prefilled[i], generated[i] - base[i], ttft[i], tbt[i]
            )

    def _admit_arrivals(self) -> None:
        while self.next_arrival < self.n and self.arrival[self.next_arrival] <= self.now:
            i = self.next_arrival
            self._refresh([i])
            self.live.append(i)
            self.not_decoding += 1
            self.next_arrival += 1

    def snapshot(self) -> SchedulerState:
        """The state a policy decides on now: every live request the cache can serve — each
        admitted one, and each waiting one whose whole prompt fits in the free blocks — and
        `KVCache.free_tokens` of the live requests. Trusted: the engine keeps its records
        valid, unique by workload id and arrived by `now` (`tests/engine` checks it against
        the checked constructor)."""
        records, prompt, kv = self.records, self.prompt, self.kv
        blocks, block, free = kv.block_list, kv.block, kv.free_blocks
        shown = [records[i] for i in self.live if blocks[i] or blocks_for(prompt[i], block) <= free]
        return trusted_state(
            self.now,
            tuple(shown),  # type: ignore[arg-type]
            self.throughput,
            kv.free_tokens(self.live),
        )

    # --- main loop -----------------------------------------------------------------------

    def run(self, progress: Callable[[int], None] | None) -> RunOutput:
        started = time.perf_counter()
        reported = 0
        pstate = self.policy.init()
        budget = int(self.policy.token_budget)
        stopped = False
        while True:
            if self.options.miss_budget is not None and self.iterations >= self._next_miss_check:
                self._next_miss_check = self.iterations + 32
                if self._certain_misses() > self.options.miss_budget:
                    stopped = True
                    break
            self._admit_arrivals()
            if not self.live:
                if self.next_arrival >= self.n:
                    break
                self.now = max(self.now, self.arrival[self.next_arrival])
                continue
            if self.options.closed_form and self.not_decoding == 0 and len(self.live) <= budget:
                advanced, pstate = self._decode_run(pstate)
                if advanced:
                    continue
            pstate, progressed = self._step(pstate, budget)
            if not progressed:
                if self.next_arrival < self.n:
                    self.now = max(self.now, self.arrival[self.next_arrival])
                    continue
                self.stalled = True
                break
            if progress is not None:
                done = self.n - len(self.live) - (self.n - self.next_arrival)
                if done > reported:
                    progress(done - reported)
                    reported = done
        wall = time.perf_counter() - started
        metrics = summarize(
            self.log,
            self.now,
            self.iterations,
            (self.pred_abs, self.pred_signed, self.pred_count),
        )
        cpu = np.array(self.cpu)
        stats = EngineStats(
            decisions=self.decisions,
            decode_runs=self.decode_runs,
            run_iterations=self.run_iterations,
            wall_seconds=wall,
            policy_cpu_seconds=float(cpu.sum()),
            policy_cpu_p50=float(np.percentile(cpu, 50)) if cpu.size else math.nan,
            policy_cpu_p99=float(np.percentile(cpu, 99)) if cpu.size else math.nan,
        )
        return RunOutput(
            metrics,
            outcome(self.log),
            self.now,
            self.stalled,
            stats,
            stopped,
            self.kv.used_blocks,
            pstate,
        )

    def _certain_misses(self) -> int:
        """Requests that have missed for sure: a late token, or a passed deadline unserved."""
        # The arrived requests that have not completed are the live ones; a completed one
        # missed iff one of its tokens was late (counted by the log as it happens).
        log, now = self.log, self.now
        late, generated = log.late, log.counts
        arrival, ttft, tbt, due = self.arrival, self.ttft, self.tbt, next_token_deadline
        due_passed = 0
        for i in self.live:
            if late[i] <= 0.0 and due(arrival[i], ttft[i], tbt[i], generated[i]) < now:
                due_passed += 1
        return log.late_count + due_passed

    def _step(self, pstate: Any, budget: int) -> tuple[Any, bool]:
        """Plan, check, run and apply one iteration; False when it ran nothing and preempted
        nothing (the caller then waits for an arrival)."""
        state = self.snapshot()
        started = time.process_time()
        plan, pstate = self.policy.plan(pstate, state)
        self.cpu.append(time.process_time() - started)
        self.decisions += 1
        if self.options.strict:
            violations = check_plan(state, plan, token_budget=budget)
            if violations:
                raise PlanViolationError(str(self.policy.name), self.now, violations)
        if self.on_plan is not None:
            self.on_plan(state, plan, budget)
        for rid in plan.preempted:
            self._preempt(self._lookup(rid, "preempted"))
        indices, chunks = self._batch(plan)
        indices, chunks, dropped, freed = self._fit_kv(indices, chunks)
        if not indices:
            return pstate, bool(plan.preempted) or freed
        executed = plan
        if dropped:
            ids = self.ids
            executed = attrs.evolve(
                plan,
                allocations=tuple(
                    Allocation(ids[i], c) for i, c in zip(indices, chunks, strict=True)
                ),
            )
        latency, was_prefill, prefill_tokens = self._execute(indices, chunks)
        if prefill_tokens:
            error = plan.predicted_latency - latency
            self.pred_abs += abs(error)
            self.pred_signed += error
            self.pred_count += 1
            memory = self.options.throughput_memory
            rate = prefill_tokens / latency
            self.throughput = memory * self.throughput + (1.0 - memory) * rate
        self._apply(indices, chunks, was_prefill)
        pstate = self.policy.observe(pstate, state, executed, latency)
        return pstate, True

    def _lookup(self, rid: str, role: str) -> int:
        i = self.index.get(rid)
        if i is None or self.records[i] is None:
            raise self._not_live(rid, role)
        return i

    def _not_live(self, rid: str, role: str) -> EngineError:
        return EngineError(f"policy {self.policy.name!r}: {role} id {rid!r} is not a live request")

    def _batch(self, plan: BatchPlan) -> tuple[list[int], list[int]]:
        """The plan as request indices and chunks, checked against what each request has left."""
        index, records, prompt, prefilled = self.index, self.records, self.prompt, self.prefilled
        found: list[int] = []
        chunks: list[int] = []
        for allocation in plan.allocations:
            i = index.get(allocation.request_id)
            if i is None or records[i] is None:
                raise self._not_live(allocation.request_id, "allocated")
            c = allocation.tokens
            if c > max(prompt[i] - prefilled[i], 1):
                raise EngineError(
                    f"policy {self.policy.name!r}: allocation {allocation!r} does not fit "
                    f"request {allocation.request_id!r} (prefill left {prompt[i] - prefilled[i]})"
                )
            found.append(i)
            chunks.append(c)
        if len(set(found)) != len(found):
            twice = next(
                a for a, i in zip(plan.allocations, found, strict=True) if found.count(i) > 1
            )
            raise EngineError(
                f"policy {self.policy.name!r}: request {twice.request_id!r} is allocated twice"
            )
        return found, chunks

    def _fit_kv(
        self, indices: list[int], chunks: list[int]
    ) -> tuple[list[int], list[int], bool, bool]:
        """Make the batch fit the cache: first the new blocks of the requests that hold some
        (decodes; an admitted prefill needs none), preempting the newest holder (vLLM) until
        they fit; then, in plan order, admit each waiting request whose whole prompt fits in
        what is left and drop the others. Returns the batch, whether it lost any allocation,
        and whether anything was preempted."""
        kv = self.kv
        blocks = kv.block_list
        if all(blocks[i] for i in indices) and kv.needed(indices, chunks) <= kv.free_blocks:
            return indices, chunks, False, False
        preempted = False
        while True:
            holding = [j for j, i in enumerate(indices) if blocks[i]]
            grow = kv.needed([indices[j] for j in holding], [chunks[j] for j in holding])
            if grow <= kv.free_blocks:
                break
            victim = kv.newest_holder(self.live)
            if victim is None:
                raise RuntimeError("kv cache: a batch needs blocks but no request holds any")
            self._preempt(victim)
            preempted = True
            kept = [(i, c) for i, c in zip(indices, chunks, strict=True) if i != victim]
            indices, chunks = [i for i, _ in kept], [c for _, c in kept]
        if len(holding) == len(indices):
            return indices, chunks, preempted, preempted
        free = kv.free_blocks - grow
        prompt, block = self.prompt, kv.block
        admitted: list[tuple[int, int]] = []
        for i, c in zip(indices, chunks, strict=True):
            if not blocks[i]:
                need = blocks_for(prompt[i], block)
                if need > free:
                    continue
                free -= need
                kv.admit(i, prompt[i])
            admitted.append((i, c))
        dropped = preempted or len(admitted) < len(indices)
        return [i for i, _ in admitted], [c for _, c in admitted], dropped, preempted

    def _execute(self, indices: list[int], chunks: list[int]) -> tuple[float, list[bool], int]:
        """Run the batch on the hardware; advance the clock by its noisy latency. Returns the
        latency, which allocations were prefill chunks, and their tokens."""
        prefilled, prompt, base = self.prefilled, self.prompt, self.base
        generated = self.log.counts
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
        latency = self.hardware.latency_of(chunks, contexts) * math.exp(
            self.sigma * self.normals.take()
        )
        self.now += latency
        self.iterations += 1
        return latency, was_prefill, prefill_tokens

    def _apply(self, indices: list[int], chunks: list[int], was_prefill: list[bool]) -> None:
        """Move prefills on, produce the tokens, retire the finished requests."""
        prefilled, prompt = self.prefilled, self.prompt
        producing: list[int] = []
        for i, c, prefill in zip(indices, chunks, was_prefill, strict=True):
            if prefill:
                prefilled[i] += c
                if prefilled[i] == prompt[i]:
                    producing.append(i)
                    self.not_decoding -= 1
            else:
                producing.append(i)
        self.log.record(producing, self.now)
        if self.probe is not None:
            produced = np.array(producing, dtype=np.int64)
            ones = np.ones(produced.size, dtype=np.int64)
            self.probe(self.now, self.kv.used_blocks, self.kv.total_blocks, produced, ones)
        self._retire_and_refresh(indices)

    def _retire_and_refresh(self, indices: list[int]) -> None:
        generated, output, records = self.log.counts, self.output_tokens, self.records
        going: list[int] = []
        for i in indices:
            if generated[i] == output[i]:
                self.kv.release(i)
                records[i] = None
            else:
                going.append(i)
        if len(going) < len(indices):
            self.live = [i for i in self.live if records[i] is not None]
        self._refresh(going)

    def _preempt(self, i: int) -> None:
        """Free request i's KV and send it back to wait, to recompute what it has (module doc)."""
        decoding = self.prefilled[i] == self.prompt[i]
        self.kv.release(i)
        self.log.preempted[i] += 1
        generated = self.log.counts[i]
        self.base[i] = generated
        self.prompt[i] = int(self.columns.prompt[i]) + generated
        self.admitted_ttft[i] = self.ttft[i] + generated * self.tbt[i]
        self.prefilled[i] = 0
        if decoding:
            self.not_decoding += 1
        self._refresh([i])

    # --- closed form ---------------------------------------------------------------------

    def _decode_run(self, pstate: Any) -> tuple[bool, Any]:
        """Advance a decode-only run up to the next event at once; False if none fits."""
        live = self.live
        generated, output = self.log.counts, self.output_tokens
        left = min([output[i] - generated[i] for i in live])
        limit = min(left, self.options.max_run)
        steps = self.kv.decode_run_length(live, limit)
        if steps == 0:
            return False, pstate
        prefilled, base_tokens = self.prefilled, self.base
        context = sum([prefilled[i] + generated[i] - base_tokens[i] for i in live])
        next_arrival = self.arrival[self.next_arrival] if self.next_arrival < self.n else math.inf
        times, latencies = self._run_times(len(live), context, steps, next_arrival)
        now = times[-1]
        ran = len(times)
        decodes = cast("tuple[Request, ...]", tuple([self.records[i] for i in live]))
        free = None if self.observes_runs else self.kv.free_tokens_over_run(live, ran)
        self.kv.write(live, [ran] * len(live))
        self.log.record_run(live, np.array(times))
        if self.probe is not None:
            indices = np.array(live, dtype=np.int64)
            counts = np.full(indices.size, ran, dtype=np.int64)
            self.probe(now, self.kv.used_blocks, self.kv.total_blocks, indices, counts)
        start, self.now = self.now, now
        self.iterations += ran
        self.decode_runs += 1
        self.run_iterations += ran
        self._retire_and_refresh(live)
        observed = observe_decode_run(
            self.policy, pstate, decodes, latencies, start, self.throughput, free
        )
        return True, observed

    def _run_times(
        self, decodes: int, context: int, steps: int, next_arrival: float
    ) -> tuple[list[float], list[float]]:
        """Token times and noisy latencies of a decode run of at most `steps` iterations from
        total context `context`, ending with the first iteration that ends at or after
        `next_arrival`: what stepping gives (each latency times exp(sigma · z), the clock
        summed one iteration at a time), priced in growing batches."""
        exp, sigma, normals = math.exp, self.sigma, self.normals
        times: list[float] = []
        latencies: list[float] = []
        now = self.now
        done, size = 0, RUN_CHUNK
        price = self.hardware.decode_pricer(decodes)
        for j in range(min(steps, RUN_SCALAR)):
            if times and now >= next_arrival:
                return times, latencies
            latency = price(context + j * decodes) * exp(sigma * normals.take())
            now += latency
            times.append(now)
            latencies.append(latency)
        done = len(times)
        if done == steps or now >= next_arrival:
            return times, latencies
        while done < steps:
            k = min(size, steps - done)
            totals = context + np.arange(done, done + k, dtype=np.int64) * decodes
            base = self.hardware.decode_latencies(decodes, totals)
            factors = np.array([exp(sigma * z) for z in normals.peek(k)])
            noisy_latencies = base * factors
            clock = np.cumsum(np.concatenate(([now], noisy_latencies)))[1:]
            # Stepping stops before an iteration once the clock has reached the arrival.
            reached = np.flatnonzero(clock >= next_arrival)
            take = k if reached.size == 0 else int(reached[0]) + 1
            normals.skip(take)
            times.extend(clock[:take].tolist())
            latencies.extend(noisy_latencies[:take].tolist())
            if reached.size:
                break
            now = times[-1]
            done += take
            size *= 2
        return times, latencies
