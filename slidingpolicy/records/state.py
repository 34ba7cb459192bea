"""The snapshot a policy decides on: time, live requests, recent throughput, free KV."""

from __future__ import annotations

from typing import Any

import attrs

from slidingpolicy import _validate
from slidingpolicy.errors import InvalidRecordError
from slidingpolicy.records._memo import Memo
from slidingpolicy.records._unchecked import constructor
from slidingpolicy.records.candidates import CandidateQueue
from slidingpolicy.records.request import Request


def _requests(value: object) -> tuple[Request, ...]:
    return tuple(value) if isinstance(value, list) else value  # type: ignore[return-value]


@attrs.frozen(slots=True, eq=False)
class SchedulerState:
    """Every live request (waiting, prefilling, decoding) at time `now`.

    `prefill_throughput` is ρ_t (tokens/s, eq. 12); `kv_free_tokens` is the number of KV slots
    free for new tokens this iteration (None = unlimited): every token a plan gives takes one
    (invariant 5).

    What a policy reads off it:

    - `decoding`: the requests whose prompt is fully cached (set D of eq. 4), in state order:
      each gets one token in every plan unless the token budget or the free KV slots forbid
      it (invariant 3).
    - `prefill_candidates`: the waiting and prefilling requests (P_t of Alg. 2), in state
      order; an engine shows a waiting one only when its whole prompt fits in the free KV.
    - `requests`: every live request, the decodes and the candidates.
    - `request(id)`: the live request with that id, or None.

    Built from one tuple of requests, or (`of`) from the decodes and a `CandidateQueue` an
    engine keeps up to date between iterations: then nothing here walks the queue unless
    asked to (`requests`, `prefill_candidates`), and a policy orders it through its indexes.
    What a state derives on first use is kept beside it (`records._memo`), not in its fields.
    """

    now: float
    _listed: tuple[Request, ...] | None = attrs.field(alias="requests", converter=_requests)
    prefill_throughput: float
    kv_free_tokens: int | None = None
    decoding: tuple[Request, ...] = attrs.field(init=False, repr=False)
    _candidates: tuple[Request, ...] | None = attrs.field(init=False, repr=False)
    """The candidates of a listed state (None for a queued one: `prefill_candidates`)."""
    _queue: CandidateQueue | None = attrs.field(init=False, repr=False)
    """The queue of a queued state (None for a listed one: `queue`)."""

    def __attrs_post_init__(self) -> None:
        record = "scheduler state"
        now = _validate.seconds(record, "now", self.now)
        _check_scalars(self)
        requests = self._listed
        if not isinstance(requests, tuple):
            raise InvalidRecordError(
                record, "requests", f"must be a tuple of Request, got {type(requests)}"
            )
        seen: set[str] = set()
        decoding: list[Request] = []
        candidates: list[Request] = []
        for request in requests:
            if type(request) is not Request or request.id in seen or request.arrival > now:
                _check_request(request, now, seen)
            seen.add(request.id)
            (decoding if request.is_decoding else candidates).append(request)
        put = object.__setattr__
        put(self, "decoding", tuple(decoding))
        put(self, "_candidates", tuple(candidates))
        put(self, "_queue", None)

    @classmethod
    def of(
        cls,
        now: float,
        decoding: tuple[Request, ...],
        queue: CandidateQueue,
        prefill_throughput: float,
        kv_free_tokens: int | None = None,
    ) -> SchedulerState:
        """The state of these decodes beside this queue of candidates (checked in time
        linear in the decodes: the queue's members were checked as they joined it, and none
        may have arrived after `now`)."""
        record = "scheduler state"
        now = _validate.seconds(record, "now", now)
        if not isinstance(decoding, tuple):
            raise InvalidRecordError(
                record, "decoding", f"must be a tuple of Request, got {type(decoding)}"
            )
        _validate.instance(record, "queue", queue, CandidateQueue)
        seen: set[str] = set()
        for request in decoding:
            _check_request(request, now, seen)
            if not request.is_decoding:
                raise InvalidRecordError(record, "decoding", f"holds {request.id!r}, not decoding")
            if request.id in queue.members:
                raise InvalidRecordError(record, "decoding", f"holds id {request.id!r} twice")
        if queue.latest_arrival > now:
            raise InvalidRecordError(
                record,
                "queue",
                f"has held a request arriving at {queue.latest_arrival}, after now={now}",
            )
        state = queued_state(now, decoding, queue, prefill_throughput, kv_free_tokens)
        _check_scalars(state)
        return state

    @property
    def requests(self) -> tuple[Request, ...]:
        """Every live request: as given, else the decodes and then the candidates."""
        listed = self._listed
        if listed is None:
            listed = _LISTED.get(self)
            if listed is None:
                listed = _LISTED.put(self, self.decoding + self.prefill_candidates)
        return listed

    @property
    def prefill_candidates(self) -> tuple[Request, ...]:
        """The waiting and prefilling requests (set P_t of Alg. 2), in state order (id
        order for a state built from a queue)."""
        candidates = self._candidates
        if candidates is None:
            candidates = _CANDIDATES.get(self)
            if candidates is None:
                candidates = _CANDIDATES.put(self, tuple(self.queue.shown()))
        return candidates

    @property
    def queue(self) -> CandidateQueue:
        """The candidates as a `CandidateQueue` (built on first use for a listed state)."""
        queue = self._queue
        if queue is None:
            queue = _QUEUE.get(self)
            if queue is None:
                queue = _QUEUE.put(self, CandidateQueue.of(self.prefill_candidates))
        return queue

    @property
    def queued(self) -> bool:
        """Whether the state was built from a queue (`of`), whose indexes outlive it: only
        then does ordering through them pay (a listed state's queue is built anew)."""
        return self._queue is not None

    def request(self, request_id: str) -> Request | None:
        """The live request with this id, if any."""
        by_id = _BY_ID.get(self)
        if by_id is None:
            by_id = {d.id: d for d in self.decoding}
            if self._queue is None:
                by_id.update((q.id, q) for q in self.prefill_candidates)
            _BY_ID.put(self, by_id)
        found = by_id.get(request_id)
        if found is None and self._queue is not None:
            return self._queue.get(request_id)
        return found

    def _identity(self) -> tuple[Any, ...]:
        return (self.now, self.requests, self.prefill_throughput, self.kv_free_tokens)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SchedulerState):
            return NotImplemented
        return self._identity() == other._identity()

    def __hash__(self) -> int:
        return hash(self._identity())


def _check_scalars(state: SchedulerState) -> None:
    record = "scheduler state"
    _validate.positive(record, "prefill_throughput", state.prefill_throughput)
    if state.kv_free_tokens is not None:
        _validate.integer(record, "kv_free_tokens", state.kv_free_tokens, 0)


def _check_request(request: object, now: float, seen: set[str]) -> None:
    if not isinstance(request, Request):
        raise InvalidRecordError("scheduler state", "requests", f"holds a non-Request {request!r}")
    if request.id in seen:
        raise InvalidRecordError("scheduler state", "requests", f"holds id {request.id!r} twice")
    seen.add(request.id)
    if request.arrival > now:
        raise InvalidRecordError(
            f"request {request.id!r}",
            "arrival",
            f"={request.arrival} is after the state's now={now}",
        )


def queued_state(
    now: float,
    decoding: tuple[Request, ...],
    queue: CandidateQueue,
    prefill_throughput: float,
    kv_free_tokens: int | None,
) -> SchedulerState:
    """`SchedulerState.of` without its checks (the engine's trusted path)."""
    return _assemble(now, None, decoding, None, queue, prefill_throughput, kv_free_tokens)


def listed_state(
    now: float,
    requests: tuple[Request, ...],
    prefill_throughput: float,
    kv_free_tokens: int | None,
) -> SchedulerState:
    """`SchedulerState(now, requests, ...)` without its checks (the engine's trusted path)."""
    decoding = tuple([r for r in requests if r.is_decoding])
    candidates = tuple([r for r in requests if not r.is_decoding])
    return _assemble(now, requests, decoding, candidates, None, prefill_throughput, kv_free_tokens)


def _assemble(
    now: float,
    listed: tuple[Request, ...] | None,
    decoding: tuple[Request, ...],
    candidates: tuple[Request, ...] | None,
    queue: CandidateQueue | None,
    prefill_throughput: float,
    kv_free_tokens: int | None,
) -> SchedulerState:
    """A state from its parts, unchecked: listed (`listed` and `candidates` given) or queued."""
    # Fields in order: now, _listed, prefill_throughput, kv_free_tokens, decoding,
    # _candidates, _queue.
    return _unchecked(now, listed, prefill_throughput, kv_free_tokens, decoding, candidates, queue)


_unchecked = constructor(SchedulerState)

_LISTED: Memo[tuple[Request, ...]] = Memo()
"""Every request of a queued state, once asked for (`SchedulerState.requests`)."""
_CANDIDATES: Memo[tuple[Request, ...]] = Memo()
"""The shown candidates of a queued state, in id order, once asked for."""
_QUEUE: Memo[CandidateQueue] = Memo()
"""The `CandidateQueue` of a listed state, once asked for."""
_BY_ID: Memo[dict[str, Request]] = Memo()
"""A state's decodes (and a listed state's candidates) by id, once one is looked up."""
