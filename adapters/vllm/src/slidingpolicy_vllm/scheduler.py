"""Scheduler classes for vLLM's `--scheduler-cls`: the policy plans, vLLM's own loop executes.

One step (`schedule()`): snapshot vLLM's requests, ask the policy for a plan, check it, then
run vLLM's `schedule()` with the plan applied through vLLM's own mechanisms: the waiting
queues hold only the planned waiting requests, in plan order; this step's token budget is
the plan's total; a request vLLM would give more than planned is capped at the plan's
tokens (0 = not this step) through `_reserve_prefill_lookahead`, whose own limit then applies.
Everything is restored in `finally`. A request the policy cannot represent (its SLO
metadata or its counts make no `Request`) is left out of the snapshot and finished alone
with the reason (`refusal`). If the snapshot or the policy raises, or
the plan breaks an invariant, vLLM schedules the step itself, and the fault is counted in
`sliding_faults` and logged once per kind. `update_from_output` feeds the measured step time
of what really ran to the policy's `observe`, and writes the step's trace line with it.
"""

from __future__ import annotations

import logging
import time
from collections import Counter, deque
from collections.abc import Iterable
from typing import Any

import attrs
from slidingpolicy import (
    Allocation,
    BatchPlan,
    InvalidRecordError,
    Request,
    SchedulerState,
    Slo,
    check_plan,
    next_throughput,
)
from slidingpolicy.embedding import executed_plan, given_up_notice
from slidingpolicy.step_trace import TraceStep, TraceWriter
from vllm.v1.core.sched.async_scheduler import AsyncScheduler
from vllm.v1.core.sched.output import SchedulerOutput
from vllm.v1.core.sched.request_queue import RequestQueue, SchedulingPolicy, create_request_queue
from vllm.v1.core.sched.scheduler import Scheduler
from vllm.v1.engine import EngineCoreOutputs
from vllm.v1.outputs import ModelRunnerOutput
from vllm.v1.request import Request as VllmRequest

from slidingpolicy_vllm.config import RECORD, SECTION, AdapterConfig
from slidingpolicy_vllm.door import require_door, slo_of
from slidingpolicy_vllm.guard import HOOK, check_attributes, check_vllm
from slidingpolicy_vllm.metrics import MetricsFeed
from slidingpolicy_vllm.refusal import REFUSED, finish_refused
from slidingpolicy_vllm.snapshot import SCHEDULABLE_WAITING, to_request

logger = logging.getLogger(__name__)


@attrs.frozen(slots=True)
class Decision:
    """What the adapter decided for one step: the snapshot, the plan, and why it fell back;
    and the waiting requests of the snapshot by id (with whether they hold KV blocks), in
    queue order."""

    state: SchedulerState | None
    plan: BatchPlan | None
    fallback: str | None
    waiting: dict[str, tuple[VllmRequest, bool]] = attrs.field(factory=dict, repr=False)


@attrs.define(slots=True)
class Known:
    """What the adapter keeps of a vLLM request between steps: the request, its SLOs, its
    arrival on the adapter's clock, and its last record (None when it had nothing to run)."""

    request: VllmRequest
    slo: Slo
    arrival: float
    record: Request | None = None


@attrs.frozen(slots=True)
class Step:
    """A scheduled step waiting for its output, to be observed with its measured time; what
    vLLM ran (request id → tokens) is kept only when the trace is on."""

    output: SchedulerOutput
    decision: Decision
    scheduled_at: float
    scheduled: dict[str, int] | None = None


def _restore(
    original: RequestQueue, used: RequestQueue, planned: list[VllmRequest]
) -> RequestQueue:
    """`original` without the planned requests vLLM admitted, and with those it preempted
    into `used` in front, as vLLM puts them."""
    left = set(used)
    admitted = [r for r in planned if r not in left]
    if admitted:
        original.remove_requests(admitted)
    planned_set = set(planned)
    preempted = [r for r in used if r not in planned_set]
    if preempted:
        original.prepend_requests(reversed(preempted))
    return original


class SlidingScheduler(Scheduler):
    """vLLM's synchronous `Scheduler`, steered by a slidingpolicy policy."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        check_vllm()
        super().__init__(*args, **kwargs)
        check_attributes(self)
        require_door(self.vllm_config)
        extra = self.vllm_config.additional_config
        section = extra.get(SECTION, {}) if isinstance(extra, dict) else {}
        self.sliding_config = AdapterConfig.from_mapping(section)
        self.sliding_policy = self.sliding_config.build_policy()
        budget = self.sliding_policy.token_budget
        if budget > self.max_num_scheduled_tokens:
            raise InvalidRecordError(
                RECORD,
                "options",
                f"policy {self.sliding_config.policy!r} plans up to {budget} tokens a step, "
                f"more than vLLM's max_num_batched_tokens={self.max_num_scheduled_tokens}: "
                "lower the policy's budget option or raise --max-num-batched-tokens",
            )
        self.sliding_pstate: Any = self.sliding_policy.init()
        self.sliding_faults: Counter[str] = Counter()
        """Steps vLLM scheduled itself (and rejected SLO metadata), by kind."""
        self.sliding_decision: Decision | None = None
        """The last step's snapshot, plan and fallback reason, for logs and tests."""
        self._epoch = time.time()
        self._throughput = self.sliding_config.prefill_throughput
        self._default_slo = Slo(self.sliding_config.ttft_slo, self.sliding_config.tbt_slo)
        self._known: dict[str, Known] = {}
        self._caps: dict[str, int] = {}
        self._pending: deque[Step] = deque()
        self._refused: dict[str, str] = {}
        """Requests left out as unrepresentable, by id, with why: finished at the next output."""
        self._last_done = 0.0
        path = self.sliding_config.trace
        self._trace = TraceWriter(path) if path is not None else None
        self._metrics = MetricsFeed()

    def schedule(self, throttle_prefills: bool = False) -> SchedulerOutput:
        """vLLM's step, as the policy planned it (or vLLM's own when the policy fails)."""
        decision = self.sliding_decision = self._decide()
        self._metrics.decided(
            self.sliding_policy, decision, self.sliding_faults, self.requests.__contains__
        )
        if decision.fallback is None and decision.state is not None and decision.plan is not None:
            given_up = given_up_notice(decision.state, decision.plan.given_up)
            self._metrics.given_up(len(given_up.keys() - self._refused.keys()))
            self._refused.update(given_up)
            output = self._schedule_plan(decision, decision.state, decision.plan, throttle_prefills)
        else:
            output = super().schedule(throttle_prefills)
        scheduled = dict(output.num_scheduled_tokens) if self._trace is not None else None
        self._pending.append(Step(output, decision, time.perf_counter(), scheduled))
        return output

    def update_from_output(
        self, scheduler_output: SchedulerOutput, model_runner_output: ModelRunnerOutput
    ) -> dict[int, EngineCoreOutputs]:
        """vLLM's update, then the policy observes the step's measured time."""
        done = time.perf_counter()
        outputs = super().update_from_output(scheduler_output, model_runner_output)
        if self._refused:
            finish_refused(self, self._refused, outputs)
            self._refused = {}
        self._observe(scheduler_output, done)
        return outputs

    def shutdown(self) -> None:
        """Trace the steps whose output never came (latency null), close the trace, then shut
        vLLM's scheduler down."""
        if self._trace is not None:
            while self._pending:
                self._record(self._pending.popleft(), None)
            self._trace.close()
            self._trace = None
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

    def _fault(self, kind: str, detail: object) -> None:
        """Count a fault; log the first of each kind."""
        self.sliding_faults[kind] += 1
        if self.sliding_faults[kind] == 1:
            logger.warning(
                "slidingpolicy: %s (%s); vLLM schedules such steps itself; "
                "later ones are counted in sliding_faults, not logged",
                kind,
                detail,
            )

    def _snapshot(self, now: float) -> tuple[SchedulerState, dict[str, tuple[VllmRequest, bool]]]:
        """The state the policy decides on: every request vLLM could schedule now, each
        record carried over from the last step unless its counts changed; and the waiting
        ones by id, with whether they hold KV blocks, in queue order. What it keeps of the
        requests vLLM freed since its last step (`finished_req_ids`) goes first: holding on
        to them slowed vLLM's own `schedule()` by a tenth with requests finishing every step.

        With the running slots full, vLLM admits no waiting request this step (the running
        queue shrinks only by preemption, and a step that preempts admits nobody), so the
        waiting queues are not read then: the policy plans only what can run."""
        requests: list[Request] = []
        waiting: dict[str, tuple[VllmRequest, bool]] = {}
        known = self._known
        for rid in self.finished_req_ids:
            known.pop(rid, None)
        if len(known) > 2 * len(self.requests) + 64:
            self._known = known = {
                rid: k for rid, k in known.items() if self.requests.get(rid) is k.request
            }
        queues: list[tuple[Iterable[VllmRequest], bool | None]] = [(self.running, None)]
        if len(self.running) + self.num_waiting_for_streaming_input < self.max_num_active_reqs:
            queues += ((self.kv_holding_waiting, True), (self.waiting, False))
        for queue, holding in queues:
            for request in queue:
                if holding is not None and request.status not in SCHEDULABLE_WAITING:
                    continue
                if request.request_id in self._refused:
                    continue
                seen = known.get(request.request_id)
                try:
                    if seen is None or seen.request is not request:
                        seen = self._meet(request)
                    arrival = seen.arrival if seen.arrival <= now else now
                    record = seen.record = to_request(request, seen.slo, arrival, seen.record)
                except InvalidRecordError as error:
                    self._refuse(request.request_id, error)
                    continue
                if record is not None:
                    requests.append(record)
                    if holding is not None:
                        waiting[record.id] = request, holding
        return SchedulerState(now, tuple(requests), self._throughput), waiting

    def _meet(self, request: VllmRequest) -> Known:
        """What the adapter keeps of a request it sees for the first time: its SLOs (the
        door's check, which raises for a value no record holds) and its arrival on the
        adapter's clock."""
        slo = slo_of(request.sampling_params, self._default_slo)
        arrival = max(request.arrival_time - self._epoch, 0.0)
        seen = self._known[request.request_id] = Known(request, slo, arrival)
        return seen

    def _refuse(self, request_id: str, error: InvalidRecordError) -> None:
        """Leave a request the policy cannot represent out of every plan, to be finished
        alone with `error` as its reason; counted, the first one logged."""
        problem = str(error).removeprefix(f"request {request_id!r}: ")
        why = f"slidingpolicy cannot schedule request {request_id!r}: {problem}"
        self._refused[request_id] = why
        self.sliding_faults[REFUSED] += 1
        if self.sliding_faults[REFUSED] == 1:
            logger.warning(
                "slidingpolicy: %s; it is finished alone, the other requests keep the policy "
                "(later ones are counted in sliding_faults[%r], not logged)",
                why,
                REFUSED,
            )

    def _decide(self) -> Decision:
        """Snapshot, plan, check; any failure becomes a fallback with its reason."""
        try:
            state, waiting = self._snapshot(time.time() - self._epoch)
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
            return Decision(state, None, reason, waiting)
        if self.sliding_config.check_plans:
            violations = check_plan(state, plan, token_budget=policy.token_budget)
            if violations:
                reason = f"plan breaks invariant {violations[0].invariant}"
                self._fault(reason, "; ".join(map(str, violations)))
                return Decision(state, plan, reason, waiting)
        self.sliding_pstate = pstate
        return Decision(state, plan, None, waiting)

    def _schedule_plan(
        self, decision: Decision, state: SchedulerState, plan: BatchPlan, throttle_prefills: bool
    ) -> SchedulerOutput:
        """Run vLLM's `schedule()` with the plan's order, budget and caps; restore after."""
        tokens = plan.tokens_of()
        waiting_plan: list[VllmRequest] = []
        holding_plan: list[VllmRequest] = []
        for rid in tokens:
            found = decision.waiting.get(rid)
            if found is not None:
                (holding_plan if found[1] else waiting_plan).append(found[0])
        caps = binding_caps(state, tokens)
        caps.update(dict.fromkeys(self._refused, 0))
        saved = (self.waiting, self.kv_holding_waiting, self.max_num_scheduled_tokens)
        self.waiting = _queue(waiting_plan)
        self.kv_holding_waiting = _queue(holding_plan)
        self.max_num_scheduled_tokens = min(saved[2], plan.total_tokens)
        if caps:
            self._caps = caps
            setattr(self, HOOK, self._capped_lookahead)
        try:
            return super().schedule(throttle_prefills)
        finally:
            if caps:
                delattr(self, HOOK)
                self._caps = {}
            self.max_num_scheduled_tokens = saved[2]
            self.waiting = _restore(saved[0], self.waiting, waiting_plan)
            self.kv_holding_waiting = _restore(saved[1], self.kv_holding_waiting, holding_plan)

    def _observe(self, output: SchedulerOutput, done: float) -> None:
        """Feed the step that produced `output` and its measured time to the policy."""
        while self._pending and self._pending[0].output is not output:
            self._record(self._pending.popleft(), None)
        if not self._pending:
            return
        step = self._pending.popleft()
        latency = done - max(step.scheduled_at, self._last_done)
        self._last_done = done
        self._record(step, latency)
        state = step.decision.state
        if state is None or not output.num_scheduled_tokens:
            return
        executed, prefill = executed_plan(state, step.decision.plan, output.num_scheduled_tokens)
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
        if self._trace is not None and state is not None and step.scheduled is not None:
            ran = tuple(Allocation(rid, tokens) for rid, tokens in step.scheduled.items())
            budget = self.sliding_policy.token_budget
            plan, fallback = step.decision.plan, step.decision.fallback
            self._trace.write(TraceStep(state, plan, budget, ran, fallback, latency))


def binding_caps(state: SchedulerState, tokens: dict[str, int]) -> dict[str, int]:
    """The planned tokens of the requests vLLM would otherwise give more: a prefill chunk
    short of its remainder, 0 for a candidate or decode the plan leaves out. (vLLM gives a
    request at most what it has left, so a decode's one token and a whole remainder need no
    cap; waiting requests the plan leaves out are not in the queues vLLM reads.)"""
    caps = {d.id: 0 for d in state.decoding if d.id not in tokens}
    for candidate in state.prefill_candidates:
        planned = tokens.get(candidate.id, 0)
        if planned < candidate.remaining_prefill:
            caps[candidate.id] = planned
    return caps


def _queue(requests: Iterable[VllmRequest]) -> RequestQueue:
    """A first-come-first-served queue holding `requests` in order."""
    queue = create_request_queue(SchedulingPolicy.FCFS)
    for request in requests:
        queue.add_request(request)
    return queue


class AsyncSlidingScheduler(SlidingScheduler, AsyncScheduler):
    """vLLM's `AsyncScheduler` (the default when async scheduling is on), steered the same way."""
