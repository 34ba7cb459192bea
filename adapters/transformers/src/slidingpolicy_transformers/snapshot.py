"""Continuous batching's queues and request state → `slidingpolicy.Request` records, as the
policy's loop reads them (`TransformersView`, an `slidingpolicy.embedding.EngineView`).

transformers keeps, per request, the tokens already in the KV cache (`position_offset`), the
prompt tokens still to prefill (`remaining_prefill_tokens`) and the tokens generated. A
request is *decoding* once its prompt is cached and it has produced a token (status
DECODING); anything else is a prefill of its remaining tokens. A request whose cache was
moved to the CPU keeps its status, so it is recorded as it was: bringing its cache back is
the engine's concern.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

from slidingpolicy import Request, Slo
from transformers.generation.continuous_batching.requests import RequestState, RequestStatus
from transformers.generation.continuous_batching.scheduler import Scheduler

from slidingpolicy_transformers.slo_book import SloBook


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


class TransformersView:
    """The requests the engine's scheduler could schedule now: the active ones, then (unless
    the engine blocks new requests) the waiting ones in queue order; their SLOs from the
    binding's book."""

    def __init__(self, scheduler: Scheduler, slos: SloBook) -> None:
        self.scheduler, self.slos = scheduler, slos

    def candidates(self) -> Iterator[tuple[str, RequestState]]:
        s = self.scheduler
        yield from s.active_requests.items()
        if not s.block_new_requests:
            waiting = s.waiting_requests
            yield from ((rid, waiting[rid]) for rid in s.waiting_requests_order if rid in waiting)

    def slo(self, handle: RequestState, default: Slo) -> Slo:
        return self.slos.get(handle.request_id)

    def stamp(self, handle: RequestState) -> float:
        return handle.created_time

    def clock(self) -> float:
        """transformers stamps a request's creation on `time.perf_counter`."""
        return time.perf_counter()

    def record(
        self, handle: RequestState, slo: Slo, arrival: float, known: Request | None
    ) -> Request | None:
        return to_request(handle, slo, arrival, known)

    def live(self, request_id: str) -> bool:
        s = self.scheduler
        return request_id in s.active_requests or request_id in s.waiting_requests
