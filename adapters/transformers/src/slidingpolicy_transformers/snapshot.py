"""Continuous batching's request state → `slidingpolicy.Request` records.

transformers keeps, per request, the tokens already in the KV cache (`position_offset`), the
prompt tokens still to prefill (`remaining_prefill_tokens`) and the tokens generated. A
request is *decoding* once its prompt is cached and it has produced a token (status
DECODING); anything else is a prefill of its remaining tokens. A request whose cache was
moved to the CPU keeps its status, so it is recorded as it was: bringing its cache back is
the engine's concern.
"""

from __future__ import annotations

from slidingpolicy import Request, Slo
from transformers.generation.continuous_batching.requests import RequestState, RequestStatus


def to_request(
    state: RequestState, slo: Slo, arrival: float, known: Request | None = None
) -> Request | None:
    """The record of a request the engine could schedule now; None when it has nothing to run.

    The record is `known`, its record of an earlier step, when its counts are the same;
    advanced by one token when it decoded one since (`Request.next_token`); else built and
    checked anew.
    """
    status = state.status
    cached = state.position_offset
    if status == RequestStatus.DECODING:
        generated = len(state.generated_tokens)
        if generated < 1 or len(state.tokens_to_process) != 1:
            return None
        prompt = cached + 1 - generated
        prefilled = prompt
    elif status in (RequestStatus.PENDING, RequestStatus.PREFILLING):
        remaining = len(state.remaining_prefill_tokens)
        if remaining < 1:
            return None
        generated, prefilled, prompt = 0, cached, cached + remaining
    else:
        return None
    if known is not None and known.arrival == arrival and known.prefilled == prefilled:
        if known.generated == generated and known.prompt_tokens == prompt:
            return known
        if generated and known.is_decoding and known.generated + 1 == generated:
            return known.next_token()
    limit = state.max_new_tokens
    return Request(
        state.request_id,
        arrival,
        prompt,
        prefilled,
        generated,
        slo.ttft,
        slo.tbt,
        slo.protected,
        limit if limit is not None and limit > generated else None,
    )
