"""A request's SLO metadata as an engine receives it: every value a client may send is either
one a `Request` holds or refused with its key, the value and the accepted range named."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slidingpolicy import SLO_KEYS, InvalidRecordError, Request, Slo, check_slo_value, read_slo
from slidingpolicy.records.slo import MIN_SLO_SECONDS, RANGES

DEFAULT = Slo(3.0, 0.1)
LONGEST = 1e10

HOSTILE = [
    ("ttft_slo", -1, "=-1"),
    ("ttft_slo", 0, "=0"),
    ("ttft_slo", "abc", "'abc'"),
    ("ttft_slo", [1, 2], "[1, 2]"),
    ("ttft_slo", True, "True"),
    ("ttft_slo", math.nan, "nan"),
    ("ttft_slo", math.inf, "inf"),
    ("ttft_slo", 1e308, "1e+308"),
    ("tbt_slo", 1e-9, "1e-09"),
    ("protected", "yes", "'yes'"),
    ("protected", 1, "1"),
]


@pytest.mark.parametrize(("key", "value", "shown"), HOSTILE)
def test_a_hostile_value_is_refused_naming_key_value_and_range(
    key: str, value: object, shown: str
) -> None:
    with pytest.raises(InvalidRecordError) as refused:
        read_slo({key: value}, DEFAULT, "extra_args")
    message = str(refused.value)
    assert message.startswith(f"extra_args: {key}")
    assert shown in message
    assert message.endswith(f"(accepted: {RANGES[key]})")


@given(st.floats(MIN_SLO_SECONDS, LONGEST), st.floats(MIN_SLO_SECONDS, LONGEST), st.booleans())
def test_every_accepted_slo_is_one_a_request_holds(ttft: float, tbt: float, flag: bool) -> None:
    slo = read_slo({"ttft_slo": ttft, "tbt_slo": tbt, "protected": flag}, DEFAULT)
    assert slo == Slo(ttft, tbt, flag)
    Request("r", 0.0, 8, 0, 0, slo.ttft, slo.tbt, slo.protected)


@given(
    st.floats(0.0, MIN_SLO_SECONDS, exclude_max=True)
    | st.floats(min_value=LONGEST, exclude_min=True)
)
def test_a_duration_below_a_millisecond_or_beyond_the_longest_is_refused(value: float) -> None:
    for key in ("ttft_slo", "tbt_slo"):
        with pytest.raises(InvalidRecordError, match=key):
            check_slo_value("extra_args", key, value)


def test_keys_left_out_take_the_default_and_other_keys_are_not_read() -> None:
    assert read_slo({"tbt_slo": 0.05, "priority": "high", "ttft_slo ": -1}, DEFAULT) == Slo(
        3.0, 0.05
    )
    assert read_slo(None, DEFAULT) is DEFAULT
    assert set(RANGES) == set(SLO_KEYS)
