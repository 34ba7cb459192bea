"""One iteration of a simulation: the snapshot a policy decides on, the plan (timed and
checked), the batch run on the hardware, and its tokens applied."""

from __future__ import annotations

import time
from typing import Any

import attrs
import numpy as np

from slidingpolicy.engine.bookkeeping import RunState
from slidingpolicy.engine.kv import blocks_for
from slidingpolicy.engine.memory import fit_kv
from slidingpolicy.engine.run_errors import PlanViolationError
from slidingpolicy.engine.trusted import trusted_state
from slidingpolicy.invariants import check_plan
from slidingpolicy.pricing.throughput import next_throughput
from slidingpolicy.records.plan import Allocation, BatchPlan
from slidingpolicy.records.state import SchedulerState, queued_state
from slidingpolicy.step_trace import TraceStep


class Stepping(RunState):
    """A simulation that steps: snapshot, plan, execute, apply."""

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
        """The policy's plan, timed, checked when the run checks plans (`EngineOptions.strict`),
        and passed to `on_plan`."""
        started = time.process_time()
        plan, pstate = self.policy.plan(pstate, state)
        self.tally.cpu.append(time.process_time() - started)
        self.tally.decisions += 1
        if self.checks_plans:
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
