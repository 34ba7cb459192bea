"""vLLM's request state → `slidingpolicy.Request` records, and the SLOs requests carry.

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

from slidingpolicy import SLO_KEYS, InvalidRecordError, Request, Slo, check_slo_value
from vllm.v1.request import Request as VllmRequest
from vllm.v1.request import RequestStatus

SCHEDULABLE_WAITING = (RequestStatus.WAITING, RequestStatus.PREEMPTED)
"""Waiting statuses vLLM admits this step (others wait for a grammar, KV transfer, input)."""


def request_slo(request: VllmRequest, default: Slo) -> tuple[Slo, str | None]:
    """The SLOs in `sampling_params.extra_args` (keys `SLO_KEYS`), `default` for those it
    does not carry; and the problem, if any.

    A value a record cannot hold is not used: the default takes its place for this request,
    and the problem says which key of which request held what, and which default the
    request gets instead, for the caller to log.
    """
    params = request.sampling_params
    extra = params.extra_args if params is not None else None
    if not extra:
        return default, None
    found: dict[str, float | bool] = {
        "ttft_slo": default.ttft,
        "tbt_slo": default.tbt,
        "protected": default.protected,
    }
    problems = []
    for key in SLO_KEYS:
        if key not in extra:
            continue
        value = extra[key]
        try:
            found[key] = check_slo_value("extra_args", key, value)
        except InvalidRecordError as error:
            why = str(error).removeprefix("extra_args: ")
            problems.append(
                f"extra_args {key}={value!r} is refused ({why}), so this request uses the "
                f"default {key}={found[key]!r}"
            )
    problem = None
    if problems:
        problem = f"request {request.request_id!r}: {'; '.join(problems)}"
    slo = Slo(float(found["ttft_slo"]), float(found["tbt_slo"]), bool(found["protected"]))
    return slo, problem


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
