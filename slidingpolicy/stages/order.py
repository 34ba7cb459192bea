"""MLPS, the multi-level priority sorter (eq. 10–16), and the EDF order it replaces.

A plan reads only the head of the ordered queue: the requests that fill what the window can
run (`pricing.queue.head`). A short queue is sorted; a long one is read off the indexes of its
`CandidateQueue` (`records.candidates`), level by level. MLPS's levels change with time —
a request turns late when its deadline passes, urgent as its slack shrinks — and the index
tells them apart exactly: it splits the queue at its deadline (late or not), and each of its
subtrees bounds r_i and d_i, so a level's scan skips every subtree where the urgency of eq. 14,
monotone in both (more work, less slack), cannot match; every request met is then checked
with the same key the sort uses. Both paths give the same head, element for element
(tests/stages/test_queue_order.py). Burst shedding (`burst_shed`) looks at the whole queue, so
a state it applies to is always sorted.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Literal

import attrs

from slidingpolicy import _validate
from slidingpolicy.pricing.queue import head
from slidingpolicy.records.candidates import (
    KEYS,
    CandidateQueue,
    Kind,
    arrival_key,
    deadline_key,
)
from slidingpolicy.records.request import Request
from slidingpolicy.records.sliding_config import SlidingConfig
from slidingpolicy.records.state import SchedulerState
from slidingpolicy.records.tree import Node, scan

MlpsKey = tuple[Any, ...]

PROMOTED, LIVE, LATE = 0, 1, 2
"""MLPS's stages of a request by its TTFT deadline d_i: promoted (past for longer than the
late grace, in a promotion window: served again), still ahead, or past (demoted)."""
LATE_PERIOD = 1.0
"""Seconds: promoted requests go first in the first `late_share` of each period
(`promotion_line`)."""

SORT_LIMIT = 64
"""Queues of at most this many candidates are sorted, and so is any state built from a list
(`SchedulerState.queued`); longer queues are read off their indexes."""


def urgency(
    remaining: int, deadline: float, now: float, throughput: float, epsilon: float
) -> float:
    """u_i = r_i / (ρ_t · max(s_i, ε)) with s_i = d_i − now (eq. 12–13): non-decreasing in r_i,
    non-increasing in d_i, in floating point too (every operation is monotone). max(s_i, ε) is
    a conditional, the same float as a call to `max`: this runs for every candidate of a plan."""
    slack = deadline - now
    return remaining / (throughput * (epsilon if epsilon > slack else slack))


def is_urgent(
    remaining: int, deadline: float, now: float, throughput: float, alpha: float, epsilon: float
) -> bool:
    """e_i = 1[u_i > α] (eq. 14): the one urgency test, of a request's (r_i, d_i) in the sort
    (`mlps_keys`) and, being monotone, of a subtree's bounds in the levels (`mlps_levels`)."""
    return urgency(remaining, deadline, now, throughput, epsilon) > alpha


def promotion_line(config: SlidingConfig, now: float) -> float:
    """The TTFT deadline at or before which a late request is promoted at `now`: now − G
    within the first `late_share` of each `LATE_PERIOD` (the promotion window), −inf outside
    it or without a `late_grace` G (`SlidingConfig`)."""
    grace = config.late_grace
    if grace is None or now % LATE_PERIOD >= config.late_share * LATE_PERIOD:
        return -math.inf
    return now - grace


def level_kind(config: SlidingConfig) -> Kind:
    """The index order inside MLPS's levels: (r_i, a_i, id), the paper's, or with
    `level_order="deadline"` (d_i, r_i, a_i, id)."""
    return "remaining" if config.level_order == "remaining" else "due"


def burst_shed(candidates: Iterable[Request], now: float, throughput: float) -> frozenset[str]:
    """The ids of the fewest live requests to give up so that every other live one can finish
    its prefill by its TTFT deadline at ρ_t tokens/s, in deadline order: Moore–Hodgson's rule
    (fewest late jobs on one machine). Walking the live requests by deadline, whenever the
    prefill work so far exceeds ρ_t·(d_k − now), the largest unprotected prompt so far is
    dropped; protected requests are never dropped (their work still counts)."""
    live = sorted((r for r in candidates if r.deadline > now), key=deadline_key)
    largest: list[tuple[int, str]] = []
    work, shed = 0, set()
    for request in live:
        work += request.remaining_prefill
        if not request.protected:
            heapq.heappush(largest, (-request.remaining_prefill, request.id))
        while largest and work > throughput * (request.deadline - now):
            size, dropped = heapq.heappop(largest)
            work += size
            shed.add(dropped)
    return frozenset(shed)


def mlps_keys(
    now: float, throughput: float, config: SlidingConfig, shed: frozenset[str] = frozenset()
) -> Callable[[Request], MlpsKey]:
    """K_i = (1 − g_i, stage_i, 1 − e_i) then the level's own order (eq. 15), as a sort key.

    stage_i is LIVE, or with `demote_late` (§7.2) LATE once the TTFT deadline has passed (or
    when the request's id is in `shed`, `burst_shed`) and, with a `late_grace` G, PROMOTED
    once it passed more than G ago, in the promotion windows (`promotion_line`;
    `PROMOTED < LIVE < LATE`);
    PROMOTED is one level, urgency aside (e_i = 0), so that promoted requests go in their own
    order. Inside a level: r_i, arrival, id (the paper's), or with `level_order="deadline"`
    the TTFT deadline, then r_i, arrival, id: the key of the `level_kind` index. e_i is
    `is_urgent`; the configuration is read once, not once per request.
    """
    demote, urgent_first = config.demote_late, config.urgent_first
    alpha, epsilon = config.urgency_threshold, config.epsilon
    tail = KEYS[level_kind(config)]
    promoted_before = promotion_line(config, now)

    def key(request: Request) -> MlpsKey:
        deadline = request.deadline
        if not demote or deadline > now:
            stage = LATE if shed and request.id in shed else LIVE
        else:
            stage = PROMOTED if deadline <= promoted_before else LATE
        calm = stage == PROMOTED or urgent_first == is_urgent(
            request.remaining_prefill, deadline, now, throughput, alpha, epsilon
        )
        return (0 if request.protected else 1, stage, 0 if calm else 1, *tail(request))

    return key


def order_candidates(
    candidates: Iterable[Request], now: float, throughput: float, config: SlidingConfig
) -> list[Request]:
    """The waiting and prefilling requests in the order `config.order` asks for (eq. 16)."""
    queue = list(candidates)
    if len(queue) < 2:
        return queue
    if config.order == "edf":
        return sorted(queue, key=deadline_key)
    shed = shed_ids(queue, now, throughput, config)
    return sorted(queue, key=mlps_keys(now, throughput, config, shed))


def shed_ids(
    candidates: Sequence[Request], now: float, throughput: float, config: SlidingConfig
) -> frozenset[str]:
    """The ids that MLPS demotes by burst shedding (`burst_shed`) when `config.shed_bursts`
    and there are candidates to order (two or more), else none."""
    if not config.shed_bursts or len(candidates) < 2:
        return frozenset()
    return burst_shed(candidates, now, throughput)


@attrs.frozen(slots=True)
class Rank:
    """A request of the ordered queue: its urgency u_i (eq. 13) and its level by K_i
    (eq. 15), named "protected", "promoted", "late" (past d_i), "shed" (`burst_shed`),
    "urgent" or "calm" (e_i, eq. 14); "edf" in the EDF order, which has no levels."""

    request: Request
    urgency: float
    level: str


def ranks(
    queue: Sequence[Request], state: SchedulerState, config: SlidingConfig
) -> tuple[Rank, ...]:
    """The rank of each request of `queue`, a head of the state's candidates as `mlps_head`
    ordered it: read off the key that ordered it (`mlps_keys`, with the shed requests)."""
    now, throughput = state.now, state.prefill_throughput
    shed = shed_ids(state.prefill_candidates, now, throughput, config)
    key = mlps_keys(now, throughput, config, shed)
    alpha, epsilon = config.urgency_threshold, config.epsilon

    def rank(request: Request) -> Rank:
        r, d = request.remaining_prefill, request.deadline
        u = urgency(r, d, now, throughput, epsilon)
        protected, stage = key(request)[:2]
        if config.order == "edf":
            level = "edf"
        elif protected == 0:
            level = "protected"
        elif stage != LIVE:
            level = "promoted" if stage == PROMOTED else ("shed" if request.id in shed else "late")
        else:
            level = "urgent" if is_urgent(r, d, now, throughput, alpha, epsilon) else "calm"
        return Rank(request, u, level)

    return tuple(map(rank, queue))


def sort_candidates(
    state: SchedulerState, config: SlidingConfig | None = None
) -> tuple[Request, ...]:
    """Q_t: the state's waiting and prefilling requests, highest priority first (Alg. 2)."""
    _validate.instance("sort_candidates", "state", state, SchedulerState)
    if config is not None:
        _validate.instance("sort_candidates", "config", config, SlidingConfig)
    config = config or SlidingConfig()
    return tuple(
        order_candidates(state.prefill_candidates, state.now, state.prefill_throughput, config)
    )


Trees = Literal["fresh", "late", "both"]
"""Which trees of an index a level reads: not late, late, or both."""


@attrs.frozen(slots=True)
class Level:
    """One level of an order read off an index: the requests with `member`, in the index's
    key order, from its `fresh` tree, its `late` one or both; `possible` is False on every
    subtree holding no member (it must never be False where one is)."""

    possible: Callable[[Node], bool]
    member: Callable[[Request], bool]
    trees: Trees = "both"


@attrs.frozen(slots=True)
class QueueOrder:
    """A fixed order of the queue: its sort `key`, and the same order as `levels` of the
    `kind` index (whose key is the tail of `key`)."""

    key: Callable[[Request], tuple[object, ...]]
    kind: Kind
    levels: tuple[Level, ...]


def _any(node: Node) -> bool:
    return True


def _every(request: Request) -> bool:
    return True


FCFS = QueueOrder(arrival_key, "arrival", (Level(_any, _every),))
"""First come, first served."""
EDF = QueueOrder(deadline_key, "deadline", (Level(_any, _every),))
"""Earliest deadline first."""


def read_levels(
    queue: CandidateQueue, kind: Kind, now: float, levels: Sequence[Level]
) -> Iterator[Request]:
    """The shown members of `queue`, level by level, each level in `kind` order."""
    index = queue.index(kind, now)
    key, limit, shows = KEYS[kind], queue.prompt_limit, queue.shows
    for level in levels:
        possible, member = level.possible, level.member
        if limit is not None:

            def fits(node: Node, possible: Callable[[Node], bool] = possible) -> bool:
                return (node.started > 0 or node.min_r <= limit) and possible(node)

            def shown(request: Request, member: Callable[[Request], bool] = member) -> bool:
                return shows(request) and member(request)

            possible, member = fits, shown
        fresh = scan(index.fresh, possible, member) if level.trees != "late" else iter(())
        late = scan(index.late, possible, member) if level.trees != "fresh" else iter(())
        if level.trees == "both":
            yield from heapq.merge(fresh, late, key=key)
        else:
            yield from fresh if level.trees == "fresh" else late


def _indexed(state: SchedulerState) -> bool:
    """Whether to read the state's queue off its indexes rather than sort it."""
    return state.queued and state.queue.size > SORT_LIMIT


Within = Callable[[Iterable[Request]], Iterable[Request]]
"""A filter of an ordered stream of candidates (which of them a plan may run), in order."""


def _every_one(stream: Iterable[Request]) -> Iterable[Request]:
    return stream


def ordered_head(
    state: SchedulerState, order: QueueOrder, reach: int | None, within: Within = _every_one
) -> list[Request]:
    """The head of the state's candidates that pass `within`, in a fixed `order` (`head`)."""
    if reach is None or not _indexed(state):
        return head(within(sorted(state.prefill_candidates, key=order.key)), reach)
    return head(within(read_levels(state.queue, order.kind, state.now, order.levels)), reach)


def _stages(config: SlidingConfig) -> tuple[int, ...]:
    """The stages MLPS tells apart, in key order."""
    if not config.demote_late:
        return (LIVE,)
    return (LIVE, LATE) if config.late_grace is None else (PROMOTED, LIVE, LATE)


def _in_stage(node: Node, stage: int, promoted_before: float) -> bool:
    """Whether a subtree of the right tree may hold a request of `stage` (never False where
    one is): the late tree splits at d_i ≤ now − G between PROMOTED and LATE."""
    if stage == PROMOTED:
        return node.min_d <= promoted_before
    if stage == LATE:
        return node.max_d > promoted_before
    return True


def mlps_levels(now: float, throughput: float, config: SlidingConfig) -> tuple[Level, ...]:
    """MLPS's levels (g_i, stage_i, e_i) in key order, each with the bounds that skip the
    subtrees holding none of its requests (module doc)."""
    key = mlps_keys(now, throughput, config)
    alpha, epsilon, demote = config.urgency_threshold, config.epsilon, config.demote_late
    promoted_before = promotion_line(config, now)
    levels = []
    for protected in (0, 1):
        for stage in _stages(config):
            for level_urgency in (0,) if stage == PROMOTED else (0, 1):
                urgent = (level_urgency == 0) == config.urgent_first
                wanted = (protected, stage, level_urgency)

                def possible(
                    node: Node,
                    protected: int = protected,
                    urgent: bool = urgent,
                    stage: int = stage,
                ) -> bool:
                    if (node.protected == 0) if protected == 0 else (node.protected == node.size):
                        return False
                    if not _in_stage(node, stage, promoted_before):
                        return False
                    if stage == PROMOTED:
                        return True
                    if urgent:
                        return is_urgent(node.max_r, node.min_d, now, throughput, alpha, epsilon)
                    return not is_urgent(node.min_r, node.max_d, now, throughput, alpha, epsilon)

                def member(request: Request, wanted: tuple[int, int, int] = wanted) -> bool:
                    return key(request)[:3] == wanted

                trees: Trees = "both" if not demote else ("fresh" if stage == LIVE else "late")
                levels.append(Level(possible, member, trees))
    return tuple(levels)


def mlps_head(
    state: SchedulerState, config: SlidingConfig, reach: int | None, within: Within = _every_one
) -> list[Request]:
    """The head of the state's candidates that pass `within`, in the order `config.order`
    asks for (`head`)."""
    now, throughput = state.now, state.prefill_throughput
    if config.order == "edf":
        return ordered_head(state, EDF, reach, within)
    if reach is None or not _indexed(state) or config.shed_bursts:
        ordered = order_candidates(state.prefill_candidates, now, throughput, config)
        return head(within(ordered), reach)
    kind = level_kind(config)
    levels = mlps_levels(now, throughput, config)
    return head(within(read_levels(state.queue, kind, now, levels)), reach)
