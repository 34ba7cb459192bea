"""The snapshot a policy decides on: time, live requests, recent throughput, free KV."""

from __future__ import annotations

import attrs

from slidingpolicy import _validate
from slidingpolicy.errors import InvalidRecordError
from slidingpolicy.records.request import Request


def _requests(value: object) -> tuple[Request, ...]:
    return tuple(value) if isinstance(value, list) else value  # type: ignore[return-value]


@attrs.frozen(slots=True)
class SchedulerState:
    """Every live request (waiting, prefilling, decoding) at time `now`.

    `prefill_throughput` is ρ_t (tokens/s, eq. 12); `kv_free_tokens` is the number of KV slots
    free for new tokens this iteration (None = unlimited).
    """

    now: float
    requests: tuple[Request, ...] = attrs.field(converter=_requests)
    prefill_throughput: float
    kv_free_tokens: int | None = None
    decoding: tuple[Request, ...] = attrs.field(init=False, eq=False, repr=False)
    """The requests whose prompt is fully cached (set D of eq. 4), in state order."""
    prefill_candidates: tuple[Request, ...] = attrs.field(init=False, eq=False, repr=False)
    """The waiting and prefilling requests (set P_t of Alg. 2), in state order."""

    def __attrs_post_init__(self) -> None:
        record = "scheduler state"
        now = _validate.finite(record, "now", self.now)
        _validate.positive(record, "prefill_throughput", self.prefill_throughput)
        if self.kv_free_tokens is not None:
            _validate.integer(record, "kv_free_tokens", self.kv_free_tokens, 0)
        if not isinstance(self.requests, tuple):
            raise InvalidRecordError(
                record, "requests", f"must be a tuple of Request, got {type(self.requests)}"
            )
        seen: set[str] = set()
        decoding: list[Request] = []
        candidates: list[Request] = []
        for request in self.requests:
            if not isinstance(request, Request):
                raise InvalidRecordError(record, "requests", f"holds a non-Request {request!r}")
            if request.id in seen:
                raise InvalidRecordError(record, "requests", f"holds id {request.id!r} twice")
            seen.add(request.id)
            if request.arrival > now:
                raise InvalidRecordError(
                    f"request {request.id!r}",
                    "arrival",
                    f"={request.arrival} is after the state's now={now}",
                )
            (decoding if request.is_decoding else candidates).append(request)
        object.__setattr__(self, "decoding", tuple(decoding))
        object.__setattr__(self, "prefill_candidates", tuple(candidates))
