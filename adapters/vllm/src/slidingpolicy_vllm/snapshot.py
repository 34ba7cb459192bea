"""vLLM's request state → `slidingpolicy.Request` records.

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

from slidingpolicy import Request, Slo
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
