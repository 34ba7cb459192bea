"""The scheduler of transformers' continuous batching, steered by the policy's loop
(`slidingpolicy.embedding.PolicyLoop`).

A plan goes to the engine through its own `_process_candidates` (token and cache budgets, KV
blocks from its allocator, the split of a chunk): requests given their whole remainder go in
one call, in plan order; a chunk short of its remainder goes alone with the chunk as its
budget, so that no request gets more than planned. On a fallback the engine's FIFO schedules
the step. Requests the loop finishes alone (refused or given up) leave the queues and their
clients get the notice as the request's error. The engine prepares each step by clearing
cancelled requests first (their clients left: counted): that call ends the previous step,
whose measured time goes to the loop.
"""

from __future__ import annotations

from typing import Any, ClassVar, Protocol

from slidingpolicy import BatchPlan, Policy, SchedulerState
from slidingpolicy.embedding import AdapterConfig, PolicyLoop
from slidingpolicy.embedding.prometheus import MetricsFeed
from transformers.generation.continuous_batching.cache import PagedAttentionCache
from transformers.generation.continuous_batching.requests import FutureRequestState, RequestState
from transformers.generation.continuous_batching.scheduler import FIFOScheduler

from slidingpolicy_transformers.guard import check_attributes, check_transformers
from slidingpolicy_transformers.plan_groups import plan_groups
from slidingpolicy_transformers.slo_book import SloBook
from slidingpolicy_transformers.snapshot import TransformersView

Batch = tuple[list[FutureRequestState] | None, bool, int, int]
"""What `schedule_batch` returns: the batch (None: the cache is full), whether the decode fast
path applies, the query tokens and the KV tokens read."""


class Bound(Protocol):
    """What the scheduler reads of its binding (`binding.Binding`)."""

    config: AdapterConfig
    policy: Policy[Any]
    slos: SloBook

    def attach(self, scheduler: SlidingScheduler) -> None: ...

    def fail(self, state: RequestState, notice: str) -> None: ...


class SlidingScheduler(FIFOScheduler):
    """transformers' `FIFOScheduler`, steered by the policy of its binding (a subclass per
    binding is registered in `SCHEDULER_MAPPING`; `Binding.scheduler_type` names it)."""

    binding: ClassVar[Bound]

    def __init__(
        self, cache: PagedAttentionCache, safety_margin: float | None, max_requests_per_batch: int
    ) -> None:
        check_transformers()
        super().__init__(cache, safety_margin, max_requests_per_batch)
        check_attributes(self)
        binding = self.binding
        self.sliding: PolicyLoop[RequestState] = PolicyLoop(
            binding.config, TransformersView(self, binding.slos), policy=binding.policy,
            fallback="the engine's FIFO schedules such steps", metrics=MetricsFeed(),
        )  # fmt: skip
        binding.attach(self)

    def reset(self) -> None:
        """The engine's reset (a new generation loop), and the loop forgets what it held."""
        super().reset()
        if hasattr(self, "sliding"):
            self.sliding.restart()

    def schedule_batch(self, token_budget: int, cache_budget: int) -> Batch:
        """The engine's next batch, as the policy planned it (or the engine's FIFO's)."""
        decision = self.sliding.decide(token_budget)
        if self.sliding.to_finish:
            self._finish_alone(self.sliding.take_finished())
        plan = decision.planned
        if plan is not None and decision.state is not None:
            batch = self._schedule_plan(decision.state, plan, token_budget, cache_budget)
        else:
            batch = super().schedule_batch(token_budget, cache_budget)
        if batch[0]:
            ran = {f.state.request_id: f.query_length for f in batch[0]}
            self.sliding.started(decision, ran)
        return batch

    def clear_cancelled_requests(self) -> list[RequestState]:
        """The engine's first call when it prepares a step: the previous step's output has
        been applied, so it is observed; then the engine's own clearing, each request
        cancelled because its client left counted."""
        self.sliding.finished()
        cancelled: list[RequestState] = super().clear_cancelled_requests()
        for state in cancelled:
            self._forget(state.request_id, cancelled=True)
        return cancelled

    def finish_request(self, request_id: str) -> None:
        """The engine's, and the adapter forgets the request."""
        super().finish_request(request_id)
        self._forget(request_id)

    def close(self) -> None:
        """Trace the step whose output never came (latency null) and close the trace."""
        self.sliding.close()

    def _forget(self, request_id: str, *, cancelled: bool = False) -> None:
        self.sliding.forget(request_id, cancelled=cancelled)
        self.binding.slos.forget(request_id)

    def _state(self, request_id: str) -> RequestState | None:
        return self.active_requests.get(request_id) or self.waiting_requests.get(request_id)

    def _finish_alone(self, notices: dict[str, str]) -> None:
        """Take each request out of the queues, free its cache, and fail it with its notice."""
        for rid, notice in notices.items():
            state = self.active_requests.pop(rid, None) or self.waiting_requests.pop(rid, None)
            if rid in self.waiting_requests_order:
                self.waiting_requests_order.remove(rid)
            self.cache.free_blocks(rid)
            self.binding.slos.forget(rid)
            if state is not None:
                self.binding.fail(state, notice)

    def _schedule_plan(
        self, state: SchedulerState, plan: BatchPlan, token_budget: int, cache_budget: int
    ) -> Batch:
        """Hand the engine the plan's requests, in plan order, each with its planned tokens."""
        removed: set[str] = set()
        scheduled: list[FutureRequestState] = []
        starved: list[Any] = []
        fast, failed, queries, reads = True, False, 0, 0
        for group, budget in plan_groups(state, plan, self._state, self.max_requests_per_batch):
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
