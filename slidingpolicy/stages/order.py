"""MLPS, the multi-level priority sorter (§4.3, eq. 10–16), and the EDF order it replaces."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from slidingpolicy.records.config import SlidingConfig
from slidingpolicy.records.request import Request
from slidingpolicy.records.state import SchedulerState

MlpsKey = tuple[int, int, int, float, float, str]


def is_urgent(
    request: Request, now: float, throughput: float, alpha: float, epsilon: float
) -> bool:
    """e_i = 1[r_i / (ρ_t · max(s_i, ε)) > α] (eq. 12–14)."""
    urgency = request.remaining_prefill / (throughput * max(request.deadline - now, epsilon))
    return urgency > alpha


def mlps_keys(now: float, throughput: float, config: SlidingConfig) -> Callable[[Request], MlpsKey]:
    """K_i = (1 − g_i, late_i, 1 − e_i, r_i) then arrival and id (eq. 15), as a sort key.

    late_i = 1 when the TTFT deadline has passed and `demote_late` is on (§7.2), else 0.
    With `level_order="deadline"` the TTFT deadline takes r_i's place inside each level.
    The configuration is read once, not once per request: this runs on every plan.
    """
    demote, urgent_first = config.demote_late, config.urgent_first
    alpha, epsilon = config.urgency_threshold, config.epsilon
    by_remaining = config.level_order == "remaining"

    def key(request: Request) -> MlpsKey:
        deadline = request.deadline
        urgent = is_urgent(request, now, throughput, alpha, epsilon)
        return (
            0 if request.protected else 1,
            1 if demote and deadline <= now else 0,
            0 if urgent == urgent_first else 1,
            request.remaining_prefill if by_remaining else deadline,
            request.arrival,
            request.id,
        )

    return key


def edf_key(request: Request) -> tuple[float, float, str]:
    """Earliest deadline of the next token first, then arrival and id (Sarathi-EDF)."""
    return (request.deadline, request.arrival, request.id)


def fcfs_key(request: Request) -> tuple[float, str]:
    """First come, first served: arrival, then id."""
    return (request.arrival, request.id)


def order_candidates(
    candidates: Iterable[Request], now: float, throughput: float, config: SlidingConfig
) -> list[Request]:
    """The waiting and prefilling requests in the order `config.order` asks for (eq. 16)."""
    queue = list(candidates)
    if len(queue) < 2:
        return queue
    if config.order == "edf":
        return sorted(queue, key=edf_key)
    return sorted(queue, key=mlps_keys(now, throughput, config))


def sort_candidates(
    state: SchedulerState, config: SlidingConfig | None = None
) -> tuple[Request, ...]:
    """Q_t: the state's waiting and prefilling requests, highest priority first (Alg. 2)."""
    config = config or SlidingConfig()
    return tuple(
        order_candidates(state.prefill_candidates, state.now, state.prefill_throughput, config)
    )
