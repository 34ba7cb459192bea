"""The one reader of a request's SLOs on the wire: what it accepts is what a `Slo` holds, what
it refuses names the key, and a flag sent as 1 or 0 (vLLM's request model passes a JSON
boolean on so) is the flag."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slidingpolicy import InvalidRecordError, Slo
from slidingpolicy.embedding import ANY_SLO, WIRE, slo_on_wire

DEFAULT = Slo(3.0, 0.1)
VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 10**12), st.floats(allow_nan=True),
    st.text(max_size=3), st.lists(st.integers(), max_size=2),
)  # fmt: skip


@given(st.dictionaries(st.sampled_from(["ttft_slo", "tbt_slo", "protected", "other"]), VALUES))
def test_a_value_is_read_into_a_slo_or_refused_naming_its_key(carried: dict[str, Any]) -> None:
    refused: InvalidRecordError | None = None
    try:
        slo = slo_on_wire(carried, DEFAULT)
    except InvalidRecordError as error:
        refused = error
    if refused is not None:
        assert refused.record == WIRE
        assert refused.field in carried
        assert refused.field != "other"
        return
    assert slo.ttft == carried.get("ttft_slo", DEFAULT.ttft)
    assert slo.tbt == carried.get("tbt_slo", DEFAULT.tbt)
    assert slo.protected == bool(carried.get("protected", DEFAULT.protected))


@pytest.mark.parametrize(("sent", "flag"), [(1, True), (0, False), (True, True), (False, False)])
def test_a_flag_sent_as_one_or_zero_is_the_flag(sent: object, flag: bool) -> None:
    assert slo_on_wire({"protected": sent}).protected is flag


@pytest.mark.parametrize("sent", [2, -1, 1.0, "1"])
def test_no_other_number_is_a_flag(sent: object) -> None:
    with pytest.raises(InvalidRecordError, match="protected"):
        slo_on_wire({"protected": sent})


@pytest.mark.parametrize("carried", [[1, 2], "ttft_slo=1", 3, {1: 2}])
def test_slo_keys_that_are_not_an_object_are_refused(carried: object) -> None:
    with pytest.raises(InvalidRecordError) as refused:
        slo_on_wire(carried)
    assert refused.value.field == WIRE


def test_no_slo_keys_is_the_default() -> None:
    assert slo_on_wire(None, DEFAULT) is DEFAULT
    assert slo_on_wire({}, DEFAULT) is DEFAULT
    assert slo_on_wire({"other": "x"}) == ANY_SLO
