"""Deadlines and the window of available time (eq. 1, 2, 7, 8, 11)."""

from __future__ import annotations

from collections.abc import Sequence

from slidingpolicy.records.request import Request


def safe_decodes(decodes: Sequence[Request], now: float) -> list[Request]:
    """D_safe: the decodes whose next-token deadline has not passed (s_i > 0, eq. 2)."""
    return [d for d in decodes if d.deadline > now]


def window_deadlines(decodes: Sequence[Request], now: float, window: int) -> tuple[float, ...]:
    """Cumulative time available to the next `window` iterations, W_1 ≤ … ≤ W_k.

    W_j = min over D_safe of (s_i + (j − 1)·L_tbt_i): W_1 = T_cur (eq. 7) and
    W_2 − W_1 = T_next (eq. 8). Empty when D_safe is empty (no TBT constraint). (In IEEE
    arithmetic d − t > 0 exactly when d > t, so the filter is eq. 2's.)
    """
    safe = [(s, d.tbt_slo) for d in decodes if (s := d.deadline - now) > 0.0]
    if not safe:
        return ()
    return tuple(min(s + j * tbt for s, tbt in safe) for j in range(window))
