"""The engine's trusted constructors build the records the checked constructors build."""

from __future__ import annotations

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from slidingpolicy import Allocation
from slidingpolicy.engine.trusted import trusted_request, trusted_state
from slidingpolicy.records.request import Request
from slidingpolicy.records.state import SchedulerState


@st.composite
def request_values(draw: st.DrawFn) -> tuple[str, float, int, int, int, float, float]:
    """The arguments of a valid live request that is not protected and has no output cap."""
    prompt = draw(st.integers(1, 5000))
    prefilled = draw(st.integers(0, prompt))
    generated = draw(st.integers(1, 300)) if prefilled == prompt else 0
    arrival = draw(st.floats(0.0, 1e6))
    ttft = draw(st.floats(1e-3, 100.0))
    tbt = draw(st.floats(1e-3, 10.0))
    rid = draw(st.text(min_size=1, max_size=8))
    return rid, arrival, prompt, prefilled, generated, ttft, tbt


@pytest.mark.slow
@given(request_values())
def test_trusted_request_equals_the_checked_one_field_by_field(
    values: tuple[str, float, int, int, int, float, float],
) -> None:
    checked = Request(*values)
    fast = trusted_request(*values)
    assert type(fast) is Request
    assert fast == checked
    for field in attrs.fields(Request):
        assert getattr(fast, field.name) == getattr(checked, field.name), field.name
        assert type(getattr(fast, field.name)) is type(getattr(checked, field.name)), field.name
    assert repr(fast) == repr(checked)
    assert hash(fast) == hash(checked)


def test_trusted_request_sets_every_field() -> None:
    fast = trusted_request("r", 0.5, 10, 4, 0, 1.0, 0.1)
    unset = [f.name for f in attrs.fields(Request) if not hasattr(fast, f.name)]
    assert unset == []


@given(st.lists(request_values(), max_size=6, unique_by=lambda v: v[0]), st.floats(0.0, 1e3))
def test_trusted_state_equals_the_checked_one(
    values: list[tuple[str, float, int, int, int, float, float]], after: float
) -> None:
    requests = tuple(trusted_request(*v) for v in values)
    now = max([r.arrival for r in requests], default=0.0) + after
    checked = SchedulerState(now, requests, 1500.0, 4096)
    fast = trusted_state(now, requests, 1500.0, 4096)
    assert fast == checked
    for field in attrs.fields(SchedulerState):
        assert getattr(fast, field.name) == getattr(checked, field.name), field.name


@given(request_values(), st.booleans(), st.integers(0, 50))
def test_next_token_equals_the_checked_record_one_token_later(
    values: tuple[str, float, int, int, int, float, float], protected: bool, room: int
) -> None:
    """`Request.next_token` builds, field by field, the record `Request(...)` checks and
    builds with generated + 1 (eq. 1's deadline one L_tbt later)."""
    rid, arrival, prompt, _, generated, ttft, tbt = values
    generated = max(generated, 1)
    cap = generated + 2 + room
    now = Request(rid, arrival, prompt, prompt, generated, ttft, tbt, protected, cap)
    later = Request(rid, arrival, prompt, prompt, generated + 1, ttft, tbt, protected, cap)
    fast = now.next_token()
    assert fast == later
    for field in attrs.fields(Request):
        assert getattr(fast, field.name) == getattr(later, field.name), field.name
        assert type(getattr(fast, field.name)) is type(getattr(later, field.name)), field.name


@given(request_values())
def test_a_record_carries_its_one_token_allocation_from_step_to_step(
    values: tuple[str, float, int, int, int, float, float],
) -> None:
    """`one_token` is Allocation(id, 1) from either constructor, and `next_token` passes the
    same object on (what a plan then reuses for the decode)."""
    checked, fast = Request(*values), trusted_request(*values)
    for record in (checked, fast):
        assert record.one_token == Allocation(record.id, 1)
        if record.is_decoding:
            assert record.next_token().one_token is record.one_token
