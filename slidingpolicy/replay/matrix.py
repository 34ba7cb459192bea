"""The runs of a replay: rates × seeds × repeats, each cell run under every arm in turn.

On a shared machine the noise drifts over minutes, so arms are interleaved: for each cell
(rate, seed, repeat), every arm runs once, in an order that rotates from one cell to the next,
so that no arm always runs first (on a cold machine) or last.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import attrs

from slidingpolicy.workloads import ArrivalProcess, Poisson, TraceTimes

T = TypeVar("T")


@attrs.frozen(slots=True)
class Cell:
    """One setting of the matrix: the arrival rate (None: a trace's recorded times), the seed
    of lengths and arrivals, and which repeat of that workload this is (0, 1, ...)."""

    rate: float | None
    seed: int
    repeat: int


def cells(rates: Sequence[float | None], seeds: Sequence[int], repeats: int) -> tuple[Cell, ...]:
    """Every (rate, seed, repeat), rates in the order given, then seeds, then repeats."""
    return tuple(Cell(r, s, k) for r in rates for s in seeds for k in range(repeats))


def interleaved(matrix: Sequence[Cell], arms: Sequence[T]) -> list[tuple[Cell, T]]:
    """Each cell under every arm, the arms' order rotated by one from one cell to the next."""
    n = len(arms)
    return [(cell, arms[(i + j) % n]) for i, cell in enumerate(matrix) for j in range(n)]


def cell_arrivals(rate: float | None, recorded_times: bool) -> ArrivalProcess:
    """A cell's arrivals: a trace's recorded times (rescaled to `rate` if given), or Poisson
    at `rate` for a workload without recorded times."""
    if recorded_times or rate is None:
        return TraceTimes(rate)
    return Poisson(rate)
