"""Solving small MILPs with HiGHS through cvxpy, to optimality, and lexicographically."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import cvxpy
import numpy as np
from numpy.typing import NDArray

cp: Any = cvxpy
"""cvxpy, untyped: its stubs cover little of the modelling API."""

HIGHS_OPTIONS: dict[str, float] = {
    "mip_rel_gap": 0.0,
    "mip_abs_gap": 0.0,
    "mip_feasibility_tolerance": 1e-9,
    "primal_feasibility_tolerance": 1e-9,
    "dual_feasibility_tolerance": 1e-9,
}
"""Gaps of zero: HiGHS's default relative gap (1e-4) would stop short of the optimum."""


class OracleError(RuntimeError):
    """The oracle itself failed (solver status not optimal): never a verdict on the code."""


def maximize(objective: Any, constraints: Sequence[Any]) -> float:
    """The optimum of a MILP (HiGHS, zero gap); raises OracleError unless solved."""
    problem = cp.Problem(cp.Maximize(objective), list(constraints))
    problem.solve(solver=cp.HIGHS, **HIGHS_OPTIONS)
    if problem.status != cp.OPTIMAL:
        raise OracleError(f"HiGHS ended with status {problem.status}")
    return float(problem.value)


def lexicographic(
    objectives: Sequence[Any], constraints: Sequence[Any], slack: Sequence[float]
) -> list[float]:
    """Maximize each objective in turn, holding the earlier ones at ≥ optimum − slack_i.

    An integer objective (a count) takes slack 0.5, which fixes it; a float objective takes
    the value tolerance that defines a tie. The variables hold the last stage's solution.
    """
    fixed = list(constraints)
    optima = []
    for objective, allowance in zip(objectives, slack, strict=True):
        best = maximize(objective, fixed)
        optima.append(best)
        fixed.append(objective >= best - allowance)
    return optima


def solution(variable: Any) -> NDArray[np.float64]:
    """A solved variable's value as a float array."""
    return np.asarray(variable.value, dtype=np.float64)
