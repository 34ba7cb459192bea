"""Oracles for the lexicographic 0/1 knapsack of eq. 19–21: a MILP and exhaustive enumeration."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from proofs.lex import NEAR, Rank, subsets
from proofs.milp import cp, lexicographic, solution


def rank_of(weights: Sequence[int], values: Sequence[float], chosen: Sequence[int]) -> Rank:
    """(count, Σ value, Σ weight) of a chosen index set."""
    return Rank(
        len(chosen), float(sum(values[i] for i in chosen)), int(sum(weights[i] for i in chosen))
    )


def value_scale(values: Sequence[float]) -> float:
    """The scale ties are measured on: max(1, Σ values)."""
    return max(1.0, float(sum(values)))


def milp(weights: Sequence[int], values: Sequence[float], capacity: int) -> Rank:
    """The lexicographic optimum by three HiGHS solves: max count; then, count fixed, max
    value; then, both fixed (value within NEAR·scale), max weight."""
    n = len(weights)
    if n == 0 or capacity < 0:
        return Rank(0, 0.0, 0)
    x = cp.Variable(n, boolean=True)
    w = np.asarray(weights, dtype=np.float64)
    v = np.asarray(values, dtype=np.float64)
    scale = value_scale(values)
    lexicographic([cp.sum(x), v @ x, w @ x], [w @ x <= capacity], [0.5, NEAR * scale, 0.5])
    chosen = [i for i in range(n) if solution(x)[i] > 0.5]
    return rank_of(weights, values, chosen)


def exhaustive(weights: Sequence[int], values: Sequence[float], capacity: int) -> Rank:
    """The lexicographic optimum over all 2^n subsets."""
    return subsets(weights, values, capacity).best(value_scale(values))
