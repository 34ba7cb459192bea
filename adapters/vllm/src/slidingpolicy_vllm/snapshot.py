"""vLLM's queues and request state → `slidingpolicy.Request` records, as the policy's loop
reads them (`VllmView`, an `slidingpolicy.embedding.EngineView`).

vLLM counts, per request, the tokens it holds (`num_tokens`: prompt plus output) and those
already in the KV cache (`num_computed_tokens`); a step brings the second up to the first.
A request is *decoding* when one token is left and it has produced output; anything else is
a prefill of `need` tokens, where a request resumed after preemption re-prefills its output
too, so its record's prompt is prompt + output, and it is recorded as the offline engine
records a recompute (`slidingpolicy.Request`): generated 0, and a TTFT SLO of L_ttft + g·L_tbt
for its g output tokens, so that its deadline is still that of its next token (eq. 1) and its
cached context u_i only what is cached. Under async scheduling the outputs of the step in
flight count as produced (`num_output_placeholders`).
"""

from __future__ import annotations

import time
from collections.abc import Iterator

from slidingpolicy import Request, Slo
from slidingpolicy.embedding import slo_on_wire
from vllm.v1.core.sched.scheduler import Scheduler
from vllm.v1.request import Request as VllmRequest
from vllm.v1.request import RequestStatus

SCHEDULABLE_WAITING = (RequestStatus.WAITING, RequestStatus.PREEMPTED)
"""Waiting statuses vLLM admits this step (others wait for a grammar, KV transfer, input)."""


def to_request(
    request: VllmRequest, slo: Slo, arrival: float, known: Request | None = None
) -> Request | None:
    """The record of a request vLLM could schedule now; None when it has nothing to run.

    vLLM's own reckoning in `schedule()`: it would schedule what is not yet cached (`need`,
    with no budget), and under async scheduling it skips a request whose step in flight
    already reaches `max_tokens`. The record is `known`, its record of an earlier step, when
    its counts are the same; advanced by one token when it decoded one since
    (`Request.next_token`); else built and checked anew.
    """
    placeholders = request.num_output_placeholders
    computed = request.num_computed_tokens
    need = request.num_tokens_with_spec + placeholders - computed
    prompt = request.num_prompt_tokens
    if need <= 0 or (
        placeholders > 0 and computed + 2 - placeholders >= prompt + request.max_tokens
    ):
        return None
    generated = request.num_output_tokens + placeholders
    decoding = generated >= 1 and need == 1 and computed >= prompt
    prefilled, ttft = prompt if decoding else computed, slo.ttft
    if not decoding:
        prompt, ttft, generated = computed + need, slo.ttft + generated * slo.tbt, 0
    if known is not None and known.arrival == arrival and known.prefilled == prefilled:
        same = known.generated == generated and known.prompt_tokens == prompt
        if same and known.ttft_slo == ttft:
            return known
        if decoding and known.is_decoding and known.generated + 1 == generated:
            return known.next_token()
    return Request(
        request.request_id, arrival, prompt, prefilled, generated, ttft, slo.tbt, slo.protected
    )


class VllmView:
    """The requests a vLLM scheduler could schedule now: the running ones, then (unless the
    running slots are full) the waiting ones that hold KV blocks and the others, in queue
    order; `holding` tells the waiting ones of the last read apart.

    With the running slots full, vLLM admits no waiting request this step (the running
    queue shrinks only by preemption, and a step that preempts admits nobody), so the
    waiting queues are not read then: the policy plans only what can run."""

    def __init__(self, scheduler: Scheduler) -> None:
        self.scheduler = scheduler
        self.holding: dict[str, bool] = {}
        """The waiting requests of the last read, by id: whether each holds KV blocks."""

    def candidates(self) -> Iterator[tuple[str, VllmRequest]]:
        s = self.scheduler
        self.holding = {}
        yield from ((r.request_id, r) for r in s.running)
        if len(s.running) + s.num_waiting_for_streaming_input >= s.max_num_active_reqs:
            return
        for queue, holding in ((s.kv_holding_waiting, True), (s.waiting, False)):
            for request in queue:
                if request.status in SCHEDULABLE_WAITING:
                    self.holding[request.request_id] = holding
                    yield request.request_id, request

    def slo(self, handle: VllmRequest, default: Slo) -> Slo:
        params = handle.sampling_params
        return slo_on_wire(params.extra_args if params is not None else None, default)

    def stamp(self, handle: VllmRequest) -> float:
        return handle.arrival_time

    def clock(self) -> float:
        """vLLM stamps a request's arrival on the wall clock."""
        return time.time()

    def record(
        self, handle: VllmRequest, slo: Slo, arrival: float, known: Request | None
    ) -> Request | None:
        return to_request(handle, slo, arrival, known)

    def live(self, request_id: str) -> bool:
        return request_id in self.scheduler.requests
