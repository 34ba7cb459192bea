"""A simulation's state and its bookkeeping: the request columns, KV cache, clock and ρ_t, the
counts (`Tally`), the requests that have certainly missed, and retiring, giving up and
preempting a request."""

from __future__ import annotations

import math
from array import array
from typing import Any

import attrs
import numpy as np

from slidingpolicy.engine.kv import KVCache
from slidingpolicy.engine.noise import Normals, engine_rng
from slidingpolicy.engine.run_types import (
    EngineOptions,
    EngineStats,
    Probe,
    RunOutput,
    StateHook,
    StepHook,
)
from slidingpolicy.engine.table import RequestTable
from slidingpolicy.engine.timeline import Timeline
from slidingpolicy.errors import InvalidRecordError
from slidingpolicy.hardware import HardwareModel
from slidingpolicy.metrics import TokenLog, outcome, summarize
from slidingpolicy.policy import DecodeRunObserver
from slidingpolicy.records.request import next_token_deadline
from slidingpolicy.workloads import Workload

THROUGHPUT_PROBE_TOKENS = 512


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


@attrs.frozen(slots=True)
class RunParts:
    """What a run is made of besides its policy and hardware: the token log, the counted
    requests left, when its counted deadlines have all passed, its table of requests and
    its noise."""

    log: TokenLog
    counted: Counted
    horizon: float
    table: RequestTable
    normals: Normals


def of_workload(workload: Workload, seed: int) -> RunParts:
    """The parts of one run of `workload`: its log (counting the workload's window), all
    its requests in one table, and the noise of `seed` (`engine_rng`)."""
    columns = workload.columns()
    window = workload.window
    log = TokenLog(columns, None if window is None else window.indices)
    table = RequestTable([r.id for r in workload.requests], columns, log)
    horizon = math.inf if window is None else window.horizon
    return RunParts(log, Counted(len(workload.counted)), horizon, table, Normals(engine_rng(seed)))


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


class Counted:
    """The counted requests of a run not yet finished (completed or given up): one for a
    run, shared by the replicas of a cluster, whose run ends when none is left."""

    __slots__ = ("left", "total")

    def __init__(self, total: int) -> None:
        self.total = total
        self.left = total


class RunState:
    """One simulation's engine-only state, and what keeps it: the outcome, the miss budget,
    retiring, giving up and preempting requests.

    A run builds its state from its workload (`of_workload`); a replica of a cluster from
    what its cluster gives it: the token log and count of counted requests all its replicas
    share, its own table of the requests routed to it and its own noise."""

    def __init__(
        self,
        policy: Any,
        hardware: HardwareModel,
        options: EngineOptions,
        on_plan: StateHook | None,
        parts: RunParts,
    ) -> None:
        self.policy = policy
        self.observes_runs = isinstance(policy, DecodeRunObserver)
        self.hardware = hardware
        self.options = options
        self.checks_plans = options.checks(policy)
        self.on_plan = on_plan
        self.probe: Probe | None = None
        self.on_step: StepHook | None = None
        self.timeline: Timeline | None = None
        self.normals = parts.normals
        self.noise = hardware.with_noise
        self.log = parts.log
        self.counted = parts.counted
        self.horizon = parts.horizon
        """When every counted token's deadline has passed (`Window.horizon`)."""
        self.table = parts.table
        self.kv = kv_cache(self.table, hardware, options)
        self.now = 0.0
        self.throughput = initial_throughput(hardware)
        self.tally = Tally()
        self.stalled = False
        self._next_miss_check = 0

    @property
    def counted_left(self) -> int:
        """Counted requests not yet finished (completed or given up)."""
        return self.counted.left

    def _output(self, pstate: Any, stopped: bool, wall: float) -> RunOutput:
        tally = self.tally
        metrics = summarize(
            self.log, self.now, tally.iterations, tally.errors(), self._waiting_at_horizon()
        )
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

    def _waiting_at_horizon(self) -> list[int]:
        """The counted requests still waiting for their first token when the run stopped at
        its horizon (none before it)."""
        if self.now <= self.horizon:
            return []
        counted, generated = self.log.counted, self.log.counts
        return [i for i in self.table.live if counted[i] and generated[i] == 0]

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
        log = self.log
        return log.late_count + log.given_up_unlate + self._due_passed(self.now)

    def _due_passed(self, now: float) -> int:
        """Live counted requests with no late token yet whose next token was due before
        `now`: they have missed. (The arrived requests that have not completed are the live
        ones; a completed one missed iff one of its tokens was late, which the log counts as
        it happens.)"""
        log, table = self.log, self.table
        late, generated, counted = log.late, log.counts, log.counted
        arrival, ttft, tbt, due = table.arrival, table.ttft, table.tbt, next_token_deadline
        due_passed = 0
        for i in table.live:
            if (
                counted[i]
                and late[i] <= 0.0
                and due(arrival[i], ttft[i], tbt[i], generated[i]) < now
            ):
                due_passed += 1
        return due_passed

    def _retire_and_refresh(self, indices: list[int], decodes: bool = False) -> None:
        counted = self.log.counted
        for i in self.table.retire_and_refresh(indices, decodes):
            self.kv.release(i)
            self.counted.left -= counted[i]

    def _give_up(self, i: int) -> None:
        """Finish request i unserved, now: the policy gave it up; it counts as missed."""
        self.counted.left -= self.log.counted[i]
        self.kv.release(i)
        self.log.give_up(i, self.now)
        self.table.give_up(i)

    def _preempt(self, i: int) -> None:
        """Free request i's KV and send it back to wait, to recompute what it has (module doc)."""
        self.kv.release(i)
        self.log.preempted[i] += 1
        self.table.recompute(i)
