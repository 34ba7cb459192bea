"""The scheduler of transformers' continuous batching, steered by a slidingpolicy policy.

One step (`schedule_batch`): snapshot the engine's active and waiting requests, ask the
policy for a plan, check it, then hand the engine the planned requests with their chunks
through its own `_process_candidates` (token and cache budgets, KV blocks from its allocator,
the split of a chunk). Requests given their whole remainder go in one call, in plan order; a
chunk short of its remainder goes alone with the chunk as its budget, so that no request gets
more than planned. If the snapshot or the policy raises, or the plan breaks an invariant, the
engine's FIFO schedules the step, and the fault is counted in `sliding_faults` and logged once
per kind. The engine prepares each step by clearing cancelled requests first: that call ends
the previous step, whose measured time goes to the policy's `observe` and the step trace.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from typing import TYPE_CHECKING, Any, ClassVar

import attrs
from slidingpolicy import (
    Allocation,
    BatchPlan,
    Request,
    SchedulerState,
    check_plan,
    next_throughput,
)
from slidingpolicy.embedding import executed_plan
from slidingpolicy.step_trace import TraceStep, TraceWriter
from transformers.generation.continuous_batching.cache import PagedAttentionCache
from transformers.generation.continuous_batching.requests import FutureRequestState, RequestState
from transformers.generation.continuous_batching.scheduler import FIFOScheduler

from slidingpolicy_transformers.guard import check_attributes, check_transformers
from slidingpolicy_transformers.metrics import MetricsFeed
from slidingpolicy_transformers.snapshot import to_request

if TYPE_CHECKING:
    from slidingpolicy_transformers.binding import Binding

logger = logging.getLogger(__name__)

Batch = tuple[list[FutureRequestState] | None, bool, int, int]
"""What `schedule_batch` returns: the batch (None: the cache is full), whether the decode fast
path applies, the query tokens and the KV tokens read."""


@attrs.frozen(slots=True)
class Decision:
    """What the adapter decided for one step: the snapshot, the plan, and why it fell back."""

    state: SchedulerState | None
    plan: BatchPlan | None
    fallback: str | None


@attrs.define(slots=True)
class Known:
    """What the adapter keeps of a request between steps: its SLOs' record, arrival and last
    record (None when it had nothing to run)."""

    state: RequestState
    arrival: float
    record: Request | None = None


@attrs.frozen(slots=True)
class Step:
    """A scheduled step waiting for its output: the decision, what ran, when it started."""

    decision: Decision
    scheduled: dict[str, int]
    started: float


class SlidingScheduler(FIFOScheduler):
    """transformers' `FIFOScheduler`, steered by the policy of its `Binding` (a subclass per
    binding is registered in `SCHEDULER_MAPPING`; `Binding.scheduler_type` names it)."""

    binding: ClassVar[Binding]

    def __init__(
        self, cache: PagedAttentionCache, safety_margin: float | None, max_requests_per_batch: int
    ) -> None:
        check_transformers()
        super().__init__(cache, safety_margin, max_requests_per_batch)
        check_attributes(self)
        config = self.binding.config
        self.sliding_config = config
        self.sliding_policy = self.binding.policy
        self.sliding_pstate: Any = self.sliding_policy.init()
        self.sliding_faults: Counter[str] = Counter()
        """Steps the engine's FIFO scheduled, by reason."""
        self.sliding_decision: Decision | None = None
        """The last step's snapshot, plan and fallback reason, for logs and tests."""
        self.sliding_steps = 0
        """Steps scheduled (by the policy or by the fallback)."""
        self._epoch = time.perf_counter()
        self._throughput = config.prefill_throughput
        self._trace = TraceWriter(config.trace) if config.trace is not None else None
        self._metrics = MetricsFeed()
        self.binding.attach(self)

    def reset(self) -> None:
        """The engine's reset, and the adapter forgets its requests and the step in flight."""
        super().reset()
        self._known: dict[str, Known] = {}
        self._pending: Step | None = None

    def schedule_batch(self, token_budget: int, cache_budget: int) -> Batch:
        """The engine's next batch, as the policy planned it (or the engine's FIFO's)."""
        decision = self.sliding_decision = self._decide(token_budget)
        self._metrics.decided(
            self.sliding_policy, decision, self.sliding_faults, self._known.__contains__
        )
        if decision.fallback is None and decision.state is not None and decision.plan is not None:
            batch = self._schedule_plan(decision.state, decision.plan, token_budget, cache_budget)
        else:
            batch = super().schedule_batch(token_budget, cache_budget)
        if batch[0]:
            self.sliding_steps += 1
            ran = {f.state.request_id: f.query_length for f in batch[0]}
            self._pending = Step(decision, ran, time.perf_counter())
        return batch

    def clear_cancelled_requests(self) -> list[RequestState]:
        """The engine's first call when it prepares a step: the previous step's output has
        been applied, so it is observed; then the engine's own clearing."""
        self._close_step(time.perf_counter())
        cancelled: list[RequestState] = super().clear_cancelled_requests()
        for state in cancelled:
            self._forget(state.request_id)
        return cancelled

    def finish_request(self, request_id: str) -> None:
        """The engine's, and the adapter forgets the request."""
        super().finish_request(request_id)
        self._forget(request_id)

    def close(self) -> None:
        """Trace the step whose output never came (latency null) and close the trace."""
        if self._trace is not None:
            if self._pending is not None:
                self._record(self._pending, None)
                self._pending = None
            self._trace.close()
            self._trace = None

    def _forget(self, request_id: str) -> None:
        self._known.pop(request_id, None)
        self.binding.slos.forget(request_id)

    def _fault(self, kind: str, detail: object) -> None:
        """Count a fault; log the first of each kind."""
        self.sliding_faults[kind] += 1
        if self.sliding_faults[kind] == 1:
            logger.warning(
                "slidingpolicy: %s (%s); the engine's FIFO schedules such steps; later ones "
                "are counted in sliding_faults, not logged",
                kind,
                detail,
            )

    def _snapshot(self, now: float) -> SchedulerState:
        """Every request the engine could schedule now: the active ones, then (unless the
        engine blocks new requests) the waiting ones in queue order."""
        requests: list[Request] = []
        states: list[RequestState] = list(self.active_requests.values())
        if not self.block_new_requests:
            waiting = self.waiting_requests
            states += [waiting[rid] for rid in self.waiting_requests_order if rid in waiting]
        known = self._known
        for state in states:
            seen = known.get(state.request_id)
            if seen is None or seen.state is not state:
                arrival = min(max(state.created_time - self._epoch, 0.0), now)
                seen = known[state.request_id] = Known(state, arrival)
            slo = self.binding.slos.get(state.request_id)
            record = seen.record = to_request(state, slo, seen.arrival, seen.record)
            if record is not None:
                requests.append(record)
        return SchedulerState(now, tuple(requests), self._throughput)

    def _decide(self, token_budget: int) -> Decision:
        """Snapshot, plan, check; any failure becomes a fallback with its reason."""
        try:
            state = self._snapshot(time.perf_counter() - self._epoch)
        except Exception as error:
            reason = f"snapshot raised {type(error).__name__}"
            self._fault(reason, error)
            return Decision(None, None, reason)
        policy = self.sliding_policy
        try:
            plan, pstate = policy.plan(self.sliding_pstate, state)
        except Exception as error:
            reason = f"policy raised {type(error).__name__}"
            self._fault(reason, error)
            return Decision(state, None, reason)
        if self.sliding_config.check_plans:
            violations = check_plan(
                state, plan, token_budget=min(policy.token_budget, token_budget)
            )
            if violations:
                reason = f"plan breaks invariant {violations[0].invariant}"
                self._fault(reason, "; ".join(map(str, violations)))
                return Decision(state, plan, reason)
        self.sliding_pstate = pstate
        return Decision(state, plan, None)

    def _schedule_plan(
        self, state: SchedulerState, plan: BatchPlan, token_budget: int, cache_budget: int
    ) -> Batch:
        """Hand the engine the plan's requests, in plan order, each with its planned tokens."""
        removed: set[str] = set()
        scheduled: list[FutureRequestState] = []
        starved: list[Any] = []
        fast, failed, queries, reads = True, False, 0, 0
        for group, budget in self._groups(state, plan):
            batch, failed_here, fast_here, used, read = self._process_candidates(
                group, min(budget, token_budget - queries), cache_budget - reads, removed
            )
            starved += self.starved_requests
            failed |= failed_here
            if batch:
                scheduled += batch
                fast &= fast_here
                queries += used
                reads += read
        self.starved_requests = starved
        self._cleanup_waiting_queue(removed)
        if not scheduled and failed:
            return None, fast, 0, 0
        return scheduled, fast and bool(scheduled), queries, reads

    def _groups(
        self, state: SchedulerState, plan: BatchPlan
    ) -> list[tuple[list[RequestState], int]]:
        """The plan's requests as the engine's calls: each run of requests given their whole
        remainder (decodes included) with its tokens as budget, and each chunk short of its
        remainder alone; at most the engine's `max_requests_per_batch` requests."""
        groups: list[tuple[list[RequestState], int]] = []
        run: list[RequestState] = []
        budget = 0
        for allocation in plan.allocations[: self.max_requests_per_batch]:
            rid = allocation.request_id
            found = self.active_requests.get(rid) or self.waiting_requests.get(rid)
            record = state.request(rid)
            if found is None or record is None:
                continue
            if record.is_decoding or allocation.tokens >= record.remaining_prefill:
                run.append(found)
                budget += allocation.tokens
                continue
            if run:
                groups.append((run, budget))
                run, budget = [], 0
            groups.append(([found], allocation.tokens))
        if run:
            groups.append((run, budget))
        return groups

    def _close_step(self, done: float) -> None:
        """Feed the step in flight, now applied, and its measured time to the policy."""
        step = self._pending
        if step is None:
            return
        self._pending = None
        latency = done - step.started
        self._record(step, latency)
        state = step.decision.state
        if state is None:
            return
        executed, prefill = executed_plan(state, step.decision.plan, step.scheduled)
        self._metrics.observed(step.decision, state, executed, latency, self.sliding_pstate)
        self._throughput = next_throughput(self._throughput, prefill, latency)
        try:
            self.sliding_pstate = self.sliding_policy.observe(
                self.sliding_pstate, state, executed, latency
            )
        except Exception as error:
            self._fault(f"observe raised {type(error).__name__}", error)

    def _record(self, step: Step, latency: float | None) -> None:
        """Trace a step that had a snapshot, with its measured time (None: never measured)."""
        state = step.decision.state
        if self._trace is None or state is None:
            return
        ran = tuple(Allocation(rid, tokens) for rid, tokens in step.scheduled.items())
        budget = self.sliding_policy.token_budget
        plan, fallback = step.decision.plan, step.decision.fallback
        self._trace.write(TraceStep(state, plan, budget, ran, fallback, latency))
