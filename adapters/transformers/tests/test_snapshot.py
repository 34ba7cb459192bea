"""The engine's request states as records: counts, phases and the carried-over record."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from slidingpolicy import Slo
from transformers.generation.continuous_batching.requests import RequestState, RequestStatus

from slidingpolicy_transformers.snapshot import to_request

SLO = Slo(2.0, 0.1, True)


def _state(prompt: int, prefilled: int, generated: int, limit: int = 1000) -> RequestState:
    """A request as the engine holds it after `prefilled` prompt tokens and `generated`
    outputs (the engine advances `position_offset` as it caches tokens)."""
    state = RequestState("r", list(range(3, 3 + prompt)), max_new_tokens=limit)
    if generated:
        state.status = RequestStatus.DECODING
        state.remaining_prefill_tokens = []
        state.generated_tokens = [9] * generated
        state.tokens_to_process = [9]
        state.position_offset = prompt + generated - 1
    elif prefilled:
        state.status = RequestStatus.PREFILLING
        state.remaining_prefill_tokens = state.remaining_prefill_tokens[prefilled:]
        state.position_offset = prefilled
    return state


@given(st.integers(1, 4000).flatmap(lambda p: st.tuples(st.just(p), st.integers(0, p - 1))))
def test_a_prefill_records_what_is_cached_and_what_is_left(case: tuple[int, int]) -> None:
    prompt, prefilled = case
    record = to_request(_state(prompt, prefilled, 0), SLO, 1.5)
    assert record is not None
    assert not record.is_decoding
    assert (record.prompt_tokens, record.prefilled, record.generated) == (prompt, prefilled, 0)
    assert record.remaining_prefill == prompt - prefilled
    assert (record.ttft_slo, record.tbt_slo, record.protected) == (2.0, 0.1, True)
    assert record.arrival == 1.5


@given(prompt=st.integers(1, 4000), generated=st.integers(1, 500))
def test_a_decode_records_its_context(prompt: int, generated: int) -> None:
    state = _state(prompt, prompt, generated, limit=generated + 1)
    record = to_request(state, SLO, 0.0)
    assert record is not None
    assert record.is_decoding
    assert (record.prompt_tokens, record.generated) == (prompt, generated)
    assert record.context_tokens == state.position_offset + 1
    assert record.max_new_tokens == generated + 1


@given(prompt=st.integers(1, 400), generated=st.integers(1, 50))
def test_the_record_is_carried_over_or_advanced_by_one_token(prompt: int, generated: int) -> None:
    before = to_request(_state(prompt, prompt, generated), SLO, 0.0)
    assert to_request(_state(prompt, prompt, generated), SLO, 0.0, before) is before
    after = to_request(_state(prompt, prompt, generated + 1), SLO, 0.0, before)
    assert after == to_request(_state(prompt, prompt, generated + 1), SLO, 0.0)


def test_a_finished_request_or_one_with_nothing_to_run_has_no_record() -> None:
    finished = _state(10, 10, 3)
    finished.status = RequestStatus.FINISHED
    assert to_request(finished, SLO, 0.0) is None
    in_flight = _state(10, 10, 1)
    in_flight.generated_tokens = []
    assert to_request(in_flight, SLO, 0.0) is None
