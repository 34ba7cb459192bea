"""Scheduler classes for vLLM's `--scheduler-cls`: the policy's loop
(`slidingpolicy.embedding.PolicyLoop`) decides, vLLM's own `schedule()` executes.

A plan is applied through vLLM's own mechanisms: the waiting queues hold only the planned
waiting requests, in plan order; this step's token budget is the plan's total; a request
vLLM would give more than planned is capped at the plan's tokens (0 = not this step) through
`_reserve_prefill_lookahead`, whose own limit then applies. Everything is restored in
`finally`. On a fallback vLLM schedules the step itself. Requests the loop finishes alone
(refused or given up) are finished at the step's output (`refusal`); `update_from_output`
tells the loop the step's time; a request vLLM aborts (its client left) is counted.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from slidingpolicy import BatchPlan, SchedulerState
from slidingpolicy.embedding import Decision, PolicyLoop, require_budget
from slidingpolicy.embedding.prometheus import MetricsFeed
from vllm.v1.core.sched.async_scheduler import AsyncScheduler
from vllm.v1.core.sched.output import SchedulerOutput
from vllm.v1.core.sched.scheduler import Scheduler
from vllm.v1.engine import EngineCoreOutputs
from vllm.v1.outputs import ModelRunnerOutput
from vllm.v1.request import Request as VllmRequest
from vllm.v1.request import RequestStatus

from slidingpolicy_vllm.config import SECTION, AdapterConfig
from slidingpolicy_vllm.door import require_door
from slidingpolicy_vllm.guard import HOOK, check_attributes, check_vllm
from slidingpolicy_vllm.plan_queues import binding_caps, planned_queue, restore_queue
from slidingpolicy_vllm.refusal import finish_refused
from slidingpolicy_vllm.snapshot import VllmView


class SlidingScheduler(Scheduler):
    """vLLM's synchronous `Scheduler`, steered by a slidingpolicy policy (`sliding`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        check_vllm()
        super().__init__(*args, **kwargs)
        check_attributes(self)
        require_door(self.vllm_config)
        extra = self.vllm_config.additional_config
        section = extra.get(SECTION, {}) if isinstance(extra, dict) else {}
        self._view = VllmView(self)
        self.sliding: PolicyLoop[VllmRequest] = PolicyLoop(
            AdapterConfig.from_mapping(section), self._view,
            fallback="vLLM schedules such steps itself", metrics=MetricsFeed(),
        )  # fmt: skip
        require_budget(self.sliding.policy, self.max_num_scheduled_tokens, "vllm config",
                       "max_num_batched_tokens", "raise --max-num-batched-tokens")  # fmt: skip
        self._caps: dict[str, int] = {}

    def schedule(self, throttle_prefills: bool = False) -> SchedulerOutput:
        """vLLM's step, as the policy planned it (or vLLM's own when the policy fails)."""
        for rid in self.finished_req_ids:
            self.sliding.forget(rid)
        decision = self.sliding.decide(self.max_num_scheduled_tokens)
        plan = decision.planned
        if plan is not None and decision.state is not None:
            output = self._schedule_plan(decision, decision.state, plan, throttle_prefills)
        else:
            output = super().schedule(throttle_prefills)
        self.sliding.started(decision, output.num_scheduled_tokens, output)
        return output

    def update_from_output(
        self, scheduler_output: SchedulerOutput, model_runner_output: ModelRunnerOutput
    ) -> dict[int, EngineCoreOutputs]:
        """vLLM's update, the requests finished alone, then the policy observes the step."""
        done = self.sliding.clock.now()
        outputs = super().update_from_output(scheduler_output, model_runner_output)
        if self.sliding.to_finish:
            finish_refused(self, self.sliding.take_finished(), outputs)
        self.sliding.finished(scheduler_output, done)
        return outputs

    def finish_requests(
        self, request_ids: str | Iterable[str] | None, finished_status: RequestStatus
    ) -> Any:
        """vLLM's; a request aborted from outside (its client left) is counted."""
        if finished_status == RequestStatus.FINISHED_ABORTED and request_ids is not None:
            ids = [request_ids] if isinstance(request_ids, str) else list(request_ids)
            for rid in ids:
                if rid in self.requests:
                    self.sliding.forget(rid, cancelled=True)
            request_ids = ids
        return super().finish_requests(request_ids, finished_status)

    def shutdown(self) -> None:
        """Close the policy's trace, then shut vLLM's scheduler down."""
        self.sliding.close()
        super().shutdown()

    def _capped_lookahead(
        self, request: VllmRequest, num_computed_tokens: int, num_new_tokens: int
    ) -> int:
        """vLLM's `_reserve_prefill_lookahead` of the request's tokens capped at the plan's:
        installed on the instance while a plan with binding caps applies (vLLM calls the hook
        for every request it schedules), so that vLLM's own limit holds for the capped
        chunk and a step with no binding cap pays nothing."""
        cap = self._caps.get(request.request_id)
        if cap is not None and cap < num_new_tokens:
            num_new_tokens = cap
        return super()._reserve_prefill_lookahead(request, num_computed_tokens, num_new_tokens)

    def _schedule_plan(
        self, decision: Decision, state: SchedulerState, plan: BatchPlan, throttle: bool
    ) -> SchedulerOutput:
        """Run vLLM's `schedule()` with the plan's order, budget and caps; restore after."""
        tokens = plan.tokens_of()
        holding = self._view.holding
        planned = [(rid, decision.handles[rid]) for rid in tokens if rid in holding]
        waiting_plan = [r for rid, r in planned if not holding[rid]]
        holding_plan = [r for rid, r in planned if holding[rid]]
        caps = binding_caps(state, tokens) | dict.fromkeys(self.sliding.to_finish, 0)
        saved = (self.waiting, self.kv_holding_waiting, self.max_num_scheduled_tokens)
        self.waiting = planned_queue(waiting_plan)
        self.kv_holding_waiting = planned_queue(holding_plan)
        self.max_num_scheduled_tokens = min(saved[2], plan.total_tokens)
        if caps:
            self._caps = caps
            setattr(self, HOOK, self._capped_lookahead)
        try:
            return super().schedule(throttle)
        finally:
            if caps:
                delattr(self, HOOK)
                self._caps = {}
            self.max_num_scheduled_tokens = saved[2]
            self.waiting = restore_queue(saved[0], self.waiting, waiting_plan)
            self.kv_holding_waiting = restore_queue(saved[1], self.kv_holding_waiting, holding_plan)


class AsyncSlidingScheduler(SlidingScheduler, AsyncScheduler):
    """vLLM's `AsyncScheduler` (the default when async scheduling is on), steered the same way."""
