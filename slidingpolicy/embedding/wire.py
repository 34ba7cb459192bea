"""A request's SLOs as they travel with it: the SLO keys (`SLO_KEYS`) of a JSON object, the
OpenAI API's ``vllm_xargs``, which vLLM hands its plug-ins as `SamplingParams.extra_args`.

Every door of every engine reads them with `slo_on_wire`, so a value one server accepts is
one every server accepts, and a refusal names the key the same way everywhere. Keys other
than the SLO keys are not read: other plug-ins use the same object. vLLM's request model
turns a JSON true or false there into 1 or 0 before anything sees it, so `protected` = 1 or
0 is read as the flag a client sent; every other value is judged by `read_slo`.
"""

from __future__ import annotations

from collections.abc import Mapping

from slidingpolicy.errors import InvalidRecordError
from slidingpolicy.records.slo import Slo, read_slo

WIRE = "vllm_xargs"
"""Where a refusal says the value was: the key of the request body that holds the SLOs."""

ANY_SLO = Slo(1.0, 1.0)
"""The defaults a door that only checks reads with: it judges only the keys a request
carries."""


def slo_on_wire(carried: object, default: Slo = ANY_SLO) -> Slo:
    """The SLOs `carried` (a request's ``vllm_xargs``, None when it has none) holds,
    `default` for the keys it lacks; an `InvalidRecordError` (a `ValueError`) naming the key,
    the value and the accepted range for the first value no request may have, or naming
    ``vllm_xargs`` when it is not an object."""
    if carried is None:
        return default
    if not isinstance(carried, Mapping) or not all(isinstance(k, str) for k in carried):
        raise InvalidRecordError("request", WIRE, f"={carried!r:.60} must be a JSON object")
    flag = carried.get("protected")
    if type(flag) is int and flag in (0, 1):
        carried = {**carried, "protected": flag == 1}
    return read_slo(carried, default, WIRE)
