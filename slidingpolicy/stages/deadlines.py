"""Deadlines and the window of available time (eq. 1, 2, 7, 8, 11)."""

from __future__ import annotations

from collections.abc import Sequence

from slidingpolicy.records.request import Request


def window_deadlines(decodes: Sequence[Request], now: float, window: int) -> tuple[float, ...]:
    """Cumulative time available to the next `window` iterations, W_1 ≤ … ≤ W_k.

    W_j = min over D_safe of (s_i + (j − 1)·L_tbt_i): W_1 = T_cur (eq. 7) and
    W_2 − W_1 = T_next (eq. 8). Empty when D_safe is empty (no TBT constraint). (In IEEE
    arithmetic d − t > 0 exactly when d > t, so the filter is eq. 2's.)

    One pass keeps the earliest safe deadline per L_tbt: d − t and s + (j − 1)·L_tbt round
    monotonically in d, so the minimum over each L_tbt's decodes is its earliest deadline's
    term, the same float.
    """
    earliest: dict[float, float] = {}
    for d in decodes:
        deadline = d.deadline
        if deadline > now:
            known = earliest.get(d.tbt_slo)
            if known is None or deadline < known:
                earliest[d.tbt_slo] = deadline
    if not earliest:
        return ()
    return tuple(min(d - now + j * tbt for tbt, d in earliest.items()) for j in range(window))


def binding_decodes(decodes: Sequence[Request], now: float, window: int) -> tuple[str, ...]:
    """The id of the decode that sets each W_j of `window_deadlines` (the same sum, so the
    same float), the least id among ties; empty when D_safe is."""
    safe = [d for d in decodes if d.deadline > now]
    if not safe:
        return ()

    def binder(j: int) -> str:
        return min(safe, key=lambda d: (d.deadline - now + j * d.tbt_slo, d.id)).id

    return tuple(binder(j) for j in range(window))
