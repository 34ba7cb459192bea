"""The prefill candidates of a state (P_t of Alg. 2), kept so that an order costs no sort.

A `CandidateQueue` is immutable: `update` returns the queue with some requests removed and
others added, sharing everything else with the queue it came from. Besides its members by id
(a persistent hash map), it keeps, for each key order a policy has asked for (`Kind`), an
`Index`: the members in that order in two persistent trees (`tree`), those whose deadline is
still ahead of a watermark and those past it. `update` carries every index forward, and
`index(kind, now)` moves the requests whose deadline passed since the watermark from one tree
to the other, so the cost of an iteration follows what changed in it, not the queue's length.
The indexes are memos kept beside the queue (`records._memo`), not in its fields: a queue's
members alone decide what it is.

`prompt_limit` is how an engine hides waiting requests its KV cache cannot hold yet: a request
that has not started its prefill is shown only when its prompt is at most `prompt_limit`
tokens.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from operator import attrgetter
from typing import Literal

import attrs
import immutables

from slidingpolicy import _validate
from slidingpolicy.errors import InvalidRecordError
from slidingpolicy.records import tree
from slidingpolicy.records._memo import Memo
from slidingpolicy.records._unchecked import constructor
from slidingpolicy.records.request import Request
from slidingpolicy.records.tree import Key, Node

Kind = Literal["remaining", "deadline", "due", "arrival"]
"""A key order of an index: (r_i, a_i, id), (d_i, a_i, id), (d_i, r_i, a_i, id) or (a_i, id).
The keys below are the one definition of the library's orders (the sorts of `stages.order`
and the baselines use them, and MLPS's key ends with one of them), each an `attrgetter`: a
key is read for every request an order compares."""


remaining_key: Callable[[Request], Key] = attrgetter("remaining_prefill", "arrival", "id")
"""(r_i, a_i, id): MLPS's order inside a level (eq. 15)."""

deadline_key: Callable[[Request], Key] = attrgetter("deadline", "arrival", "id")
"""(d_i, a_i, id): earliest deadline first (Sarathi-EDF, MLPS's EDF ablation)."""

due_key: Callable[[Request], Key] = attrgetter("deadline", "remaining_prefill", "arrival", "id")
"""(d_i, r_i, a_i, id): earliest deadline first, the shortest first among equal deadlines
(requests that arrive together: the most of them then meet it)."""

arrival_key: Callable[[Request], Key] = attrgetter("arrival", "id")
"""(a_i, id): first come, first served (vLLM; the decodes' admission order)."""

KEYS: dict[Kind, Callable[[Request], Key]] = {
    "remaining": remaining_key,
    "deadline": deadline_key,
    "due": due_key,
    "arrival": arrival_key,
}


@attrs.frozen(slots=True)
class Index:
    """A queue's members in `kind` order: `fresh` holds those with d_i > `watermark`,
    `late` those with d_i ≤ it."""

    kind: Kind
    watermark: float
    fresh: Node | None
    late: Node | None

    @classmethod
    def build(cls, kind: Kind, members: Iterable[Request], now: float) -> Index:
        """The index of `members` at watermark `now`."""
        key = KEYS[kind]
        pairs = sorted(((key(q), q) for q in members), key=lambda pair: pair[0])
        fresh = [pair for pair in pairs if pair[1].deadline > now]
        late = [pair for pair in pairs if pair[1].deadline <= now]
        return cls(kind, now, tree.build(fresh), tree.build(late))

    def updated(self, removed: Iterable[Request], added: Iterable[Request]) -> Index:
        """The index without `removed` (members) and with `added`."""
        key, watermark = KEYS[self.kind], self.watermark
        fresh, late = self.fresh, self.late
        for q in removed:
            if q.deadline > watermark:
                fresh = tree.delete(fresh, key(q))
            else:
                late = tree.delete(late, key(q))
        for q in added:
            if q.deadline > watermark:
                fresh = tree.insert(fresh, key(q), q)
            else:
                late = tree.insert(late, key(q), q)
        return Index(self.kind, watermark, fresh, late)

    def advanced(self, now: float) -> Index:
        """The index at watermark `now` ≥ its own: every fresh request whose deadline has
        passed by `now` moved to `late`."""
        if now == self.watermark:
            return self
        passed = list(tree.scan(self.fresh, lambda n: n.min_d <= now, lambda q: q.deadline <= now))
        key = KEYS[self.kind]
        fresh, late = self.fresh, self.late
        for q in passed:
            fresh = tree.delete(fresh, key(q))
            late = tree.insert(late, key(q), q)
        return Index(self.kind, now, fresh, late)


def _id(request: Request) -> str:
    return request.id


@attrs.frozen(slots=True, eq=False)
class CandidateQueue:
    """The waiting and prefilling requests of a state, by id; those not started shown only
    when their prompt is at most `prompt_limit` tokens (None: all shown). Empty when built: requests
    join through `update` (or `of`), which checks them."""

    prompt_limit: int | None = None
    members: immutables.Map[str, Request] = attrs.field(factory=immutables.Map, init=False)
    latest_arrival: float = attrs.field(default=0.0, init=False)
    """The latest arrival of any request this queue, or one it came from, has held: no state
    built on it may be earlier."""

    def __attrs_post_init__(self) -> None:
        if self.prompt_limit is not None:
            _validate.integer("candidate queue", "prompt_limit", self.prompt_limit, 0)

    @classmethod
    def of(cls, requests: Iterable[Request], prompt_limit: int | None = None) -> CandidateQueue:
        """The queue of these waiting and prefilling requests."""
        return cls(prompt_limit).update(add=requests)

    def _derived(
        self, members: immutables.Map[str, Request], prompt_limit: int | None, latest: float
    ) -> CandidateQueue:
        """A queue of checked members (no validation: this runs once per iteration)."""
        return _unchecked(prompt_limit, members, latest)

    @property
    def size(self) -> int:
        """Members, shown or not."""
        return len(self.members)

    def shows(self, request: Request) -> bool:
        """Whether a member is shown: started, or its prompt at most `prompt_limit` tokens."""
        limit = self.prompt_limit
        return limit is None or request.prefilled > 0 or request.prompt_tokens <= limit

    def get(self, request_id: str) -> Request | None:
        """The shown member with this id, if any."""
        request = self.members.get(request_id)
        return request if request is not None and self.shows(request) else None

    def shown(self) -> list[Request]:
        """Every shown member, in id order."""
        members = self.members.values()
        if self.prompt_limit is None:
            return sorted(members, key=_id)
        return sorted(filter(self.shows, members), key=_id)

    def with_prompt_limit(self, prompt_limit: int | None) -> CandidateQueue:
        """The same members, shown under another `prompt_limit`; it shares this queue's indexes
        (they hold every member, shown or not), so that an index built on it stays with this
        queue and the queues made from it."""
        if prompt_limit is not None:
            _validate.integer("candidate queue", "prompt_limit", prompt_limit, 0)
        queue: CandidateQueue = _unchecked(prompt_limit, self.members, self.latest_arrival)
        indexes = _INDEXES.get(self)
        if indexes is None:
            indexes = _INDEXES.put(self, {})
        _INDEXES.put(queue, indexes)
        return queue

    def update(self, remove: Iterable[str] = (), add: Iterable[Request] = ()) -> CandidateQueue:
        """The queue less the members with ids `remove`, plus the requests `add` (neither
        decoding nor sharing an id with a member left); every index carried forward."""
        record, members = "candidate queue", self.members
        leaving, joining = list(remove), list(add)
        gone: set[str] = set()
        for rid in leaving:
            if rid not in members or rid in gone:
                raise InvalidRecordError(record, "remove", f"names {rid!r}, not a member")
            gone.add(rid)
        seen: set[str] = set()
        for request in joining:
            if not isinstance(request, Request):
                raise InvalidRecordError(record, "add", f"holds a non-Request {request!r}")
            if request.is_decoding:
                raise InvalidRecordError(
                    record, "add", f"holds {request.id!r}, which is decoding, not a candidate"
                )
            if (request.id in members and request.id not in gone) or request.id in seen:
                raise InvalidRecordError(record, "add", f"holds id {request.id!r} twice")
            seen.add(request.id)
        return self.replaced(leaving, joining)

    def replaced(self, remove: list[str], add: list[Request]) -> CandidateQueue:
        """`update` without its checks, for an engine that keeps its records valid: `remove`
        names members, `add` holds candidates whose ids are not members once those leave."""
        members = self.members.mutate()
        removed = [members.pop(rid) for rid in remove]
        latest = self.latest_arrival
        for request in add:
            members[request.id] = request
            latest = max(latest, request.arrival)
        queue = self._derived(members.finish(), self.prompt_limit, latest)
        indexes = _INDEXES.get(self)
        if indexes:
            _INDEXES.put(queue, {kind: i.updated(removed, add) for kind, i in indexes.items()})
        return queue

    def index(self, kind: Kind, now: float) -> Index:
        """The members in `kind` order at watermark `now`: built on first use, then advanced
        from the last one asked for (rebuilt if `now` is earlier than its watermark)."""
        indexes = _INDEXES.get(self)
        if indexes is None:
            indexes = _INDEXES.put(self, {})
        index = indexes.get(kind)
        if index is None or now < index.watermark:
            index = Index.build(kind, self.members.values(), now)
        else:
            index = index.advanced(now)
        indexes[kind] = index
        return index


_unchecked = constructor(CandidateQueue)

_INDEXES: Memo[dict[Kind, Index]] = Memo()
"""A queue's indexes by kind: built on first use, advanced as time moves on, carried to the
queues `update` and `with_prompt_limit` make from it (and shared with the latter)."""
