"""The stages' trusted `Allocation` is the checked one, field by field."""

from __future__ import annotations

import attrs
from hypothesis import given
from hypothesis import strategies as st

from slidingpolicy import Allocation
from slidingpolicy.records.plan import trusted_allocation


@given(st.text(min_size=1), st.integers(min_value=1, max_value=1 << 40))
def test_trusted_allocation_equals_the_checked_one(request_id: str, tokens: int) -> None:
    fast, checked = trusted_allocation(request_id, tokens), Allocation(request_id, tokens)
    assert type(fast) is Allocation
    assert attrs.astuple(fast) == attrs.astuple(checked)
    assert fast == checked
    assert hash(fast) == hash(checked)
