"""Early notice of hopeless requests (`SlidingConfig.give_up_after`).

A request attains its SLO only if its first token comes by its TTFT deadline d_i (eq. 1): once
d_i has passed with its prefill unfinished, it has missed, and serving it late only takes the
engine from live requests. With a give-up delay X, a waiting or prefilling request (not
protected) whose deadline is at or before now − X is given up: the plan names it and runs
none of its tokens, and the engine finishes it with its own reason, so that a client or a
router learns by d_i + X that it should retry elsewhere. The rest of the plan is made on the
state without it, so no later plan can schedule it (an engine no longer shows it).
"""

from __future__ import annotations

import math

from slidingpolicy.records.candidates import Kind, deadline_key
from slidingpolicy.records.request import Request
from slidingpolicy.records.sliding_config import SlidingConfig
from slidingpolicy.records.state import SchedulerState, listed_state, queued_state
from slidingpolicy.records.tree import Node, scan
from slidingpolicy.stages.order import SORT_LIMIT

INDEX: Kind = "deadline"
"""The index a long queue's hopeless requests are read off (its late tree, by deadline)."""


def give_up_line(config: SlidingConfig, now: float) -> float:
    """The TTFT deadline at or before which a candidate is given up at `now`: now − X, or
    −inf without a give-up delay X."""
    after = config.give_up_after
    return -math.inf if after is None else now - after


def hopeless(state: SchedulerState, config: SlidingConfig) -> tuple[str, ...]:
    """The ids of the shown waiting and prefilling requests to give up now (module doc), in
    deadline order: a long queue's read off its deadline index, which skips every subtree
    whose earliest deadline is after the line or whose requests are all protected."""
    line = give_up_line(config, state.now)
    if line == -math.inf:
        return ()

    def gone(request: Request) -> bool:
        return request.deadline <= line and not request.protected

    if not (state.queued and state.queue.size > SORT_LIMIT):
        return tuple(r.id for r in sorted(filter(gone, state.prefill_candidates), key=deadline_key))
    queue = state.queue

    def possible(node: Node) -> bool:
        return node.min_d <= line and node.protected < node.size

    def shown(request: Request) -> bool:
        return gone(request) and queue.shows(request)

    late = queue.index(INDEX, state.now).late
    return tuple(r.id for r in scan(late, possible, shown))


def without(state: SchedulerState, given_up: tuple[str, ...]) -> SchedulerState:
    """The state less the candidates `given_up` (ids of its shown waiting or prefilling
    requests)."""
    if state.queued:
        queue = state.queue.replaced(list(given_up), [])
        return queued_state(
            state.now, state.decoding, queue, state.prefill_throughput, state.kv_free_tokens
        )
    ids = set(given_up)
    kept = tuple([r for r in state.requests if r.id not in ids])
    return listed_state(state.now, kept, state.prefill_throughput, state.kv_free_tokens)
