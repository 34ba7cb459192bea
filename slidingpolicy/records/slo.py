"""A request's SLOs as an engine receives them with the request: L_ttft and L_tbt in seconds
(eq. 1) and the protected flag g_i, under the keys `SLO_KEYS`.

Every engine adapter reads them the same way: `read_slo` checks each key as `Request` checks
its field, so that a value it accepts is one a record can hold, and names the key it refuses.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from slidingpolicy import _validate
from slidingpolicy.errors import InvalidRecordError

SLO_KEYS = ("ttft_slo", "tbt_slo", "protected")
"""The keys a request's SLO metadata may carry."""

MIN_SLO_SECONDS = 1e-3
"""The shortest SLO a request may ask for: no engine step ends within a millisecond, so a
shorter L_ttft or L_tbt cannot be met by any token (1e-9 is a unit slip, not a wish)."""

RANGES = {
    "ttft_slo": f"seconds, a number >= {MIN_SLO_SECONDS:g} and <= {_validate.MAX_SECONDS:g}",
    "tbt_slo": f"seconds, a number >= {MIN_SLO_SECONDS:g} and <= {_validate.MAX_SECONDS:g}",
    "protected": "true or false",
}
"""What each key accepts, as error messages and documentation say it."""


@attrs.frozen(slots=True)
class Slo:
    """A request's TTFT and TBT SLOs (seconds) and its protected flag g_i."""

    ttft: float
    tbt: float
    protected: bool = False

    def __attrs_post_init__(self) -> None:
        record = "slo"
        object.__setattr__(self, "ttft", _validate.duration(record, "ttft_slo", self.ttft))
        object.__setattr__(self, "tbt", _validate.duration(record, "tbt_slo", self.tbt))
        _validate.flag(record, "protected", self.protected)


def check_slo_value(record: str, key: str, value: object) -> float | bool:
    """`value` of SLO key `key`, checked: a duration a `Request` holds and at least
    `MIN_SLO_SECONDS`, or a bool for `protected`; an `InvalidRecordError` naming `record`,
    the key, the value and the accepted range otherwise."""
    if key not in RANGES:
        raise _validate.fail(record, key, f"is not an SLO key ({', '.join(SLO_KEYS)})")
    try:
        if key == "protected":
            return _validate.flag(record, key, value)
        seconds = _validate.duration(record, key, value)
        if seconds < MIN_SLO_SECONDS:
            raise _validate.fail(record, key, f"={seconds:g} s is shorter than any step")
        return seconds
    except InvalidRecordError as error:
        problem = str(error).removeprefix(f"{record}: {key}").lstrip(" ")
        raise _validate.fail(record, key, f"{problem} (accepted: {RANGES[key]})") from None


def read_slo(metadata: Mapping[str, object] | None, default: Slo, record: str = "request") -> Slo:
    """The SLOs that `metadata` carries, `default` for the keys it lacks; keys other than
    `SLO_KEYS` are not read. The first value a record cannot hold raises `InvalidRecordError`
    naming its key (`check_slo_value`)."""
    if not metadata:
        return default
    ttft, tbt, protected = default.ttft, default.tbt, default.protected
    if "ttft_slo" in metadata:
        ttft = float(check_slo_value(record, "ttft_slo", metadata["ttft_slo"]))
    if "tbt_slo" in metadata:
        tbt = float(check_slo_value(record, "tbt_slo", metadata["tbt_slo"]))
    if "protected" in metadata:
        protected = bool(check_slo_value(record, "protected", metadata["protected"]))
    return Slo(ttft, tbt, protected)
