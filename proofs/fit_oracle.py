"""Oracle for the calibration (§4.1): cvxpy's bounded least squares per scenario."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from proofs.milp import OracleError, cp, solution
from slidingpolicy.pricing.features import FloatArray
from slidingpolicy.pricing.model import LinearModel
from slidingpolicy.pricing.samples import Sample

CLARABEL_OPTIONS: dict[str, float] = {
    "tol_gap_abs": 1e-10,
    "tol_gap_rel": 1e-10,
    "tol_feas": 1e-10,
    "max_iter": 500,
}
"""Tolerances met on the scaled problem (`_box_least_squares`), where 1e-10 is 1e-10·f(p) ≥
1e-10 × the optimum: a thousandth of the tests' 1e-7. Clarabel's `AlmostSolved` (cvxpy's
`OPTIMAL_INACCURATE`, its reduced tolerances) is refused."""


def design(samples: Sequence[Sample], tile: int | None = None) -> tuple[FloatArray, FloatArray]:
    """The rows [1, x1..x7] (and x8 with a `tile`) and the latencies of `samples`."""
    rows = [np.concatenate(([1.0], s.features(tile)[0])) for s in samples]
    width = 8 if tile is None else 9
    return np.array(rows).reshape(len(samples), width), np.array([s.latency for s in samples])


def rss(model: LinearModel, rows: FloatArray, latencies: FloatArray) -> float:
    """Σ (T̂ − y)² of a model on the rows."""
    w = np.array([model.intercept, *model.weights])
    return float(((rows @ w - latencies) ** 2).sum())


def feasible(point: FloatArray, low: FloatArray, high: FloatArray) -> FloatArray:
    """cvxpy's point clipped to its box: only a feasible point's cost bounds the optimum, and
    Clarabel's feasibility tolerance is absolute, so at latencies of 1e-44 its point may leave
    a box [0, 0] and undercut the optimum (test_fit, ZERO_BOX)."""
    clipped: FloatArray = np.clip(point, low, high)
    return clipped


def _box_least_squares(
    rows: FloatArray,
    latencies: FloatArray,
    bounds: tuple[FloatArray, FloatArray],
    terms: FloatArray,
    center: FloatArray,
) -> float:
    """min ‖Xw − y‖² + Σ_j t_j·(w_j − c_j)² s.t. low ≤ w ≤ high, by Clarabel; the objective at
    its point clipped to the bounds (`feasible`).

    Columns are scaled to unit norm (bounds, t and c with them) and all-zero ones dropped
    (their t is 0 and they do not change the residual); a weight whose box is one point is
    that point. The rest is measured in units of √f(p), p the feasible point nearest 0, so
    that the optimum, at most f(p), is at most 1 and Clarabel's absolute tolerances are
    relative to it (f(p) = 0 makes p optimal), and the rows are reduced to R, Qᵀy of X = QR
    (the residual changes by a constant). Raises OracleError unless Clarabel ends `OPTIMAL`.
    """
    low, high = bounds
    norms = np.linalg.norm(rows, axis=0)
    used = norms > 0
    x = rows[:, used] / norms[used]
    low, high = low[used] * norms[used], high[used] * norms[used]
    terms, center = terms[used] / norms[used] ** 2, center[used] * norms[used]

    def cost(w: FloatArray) -> float:
        return float(((x @ w - latencies) ** 2).sum() + (terms * (w - center) ** 2).sum())

    point = np.clip(np.zeros(x.shape[1]), low, high)
    unit = np.sqrt(cost(point))
    free = high > low
    if unit == 0.0 or not free.any():
        return cost(point)
    q, r = np.linalg.qr(x[:, free])
    target = q.T @ (latencies - x[:, ~free] @ point[~free]) / unit
    v = cp.Variable(int(free.sum()))
    goal = cp.sum_squares(r @ v - target)
    goal += cp.sum(cp.multiply(terms[free], (v - center[free] / unit) ** 2))
    constraints = [v >= low[free] / unit]
    finite = np.flatnonzero(np.isfinite(high[free]))
    if finite.size:
        constraints.append(v[finite] <= high[free][finite] / unit)
    problem = cp.Problem(cp.Minimize(goal), constraints)
    problem.solve(solver=cp.CLARABEL, **CLARABEL_OPTIONS)
    if problem.status != cp.OPTIMAL:
        raise OracleError(f"Clarabel ended with status {problem.status}")
    point[free] = unit * solution(v)
    return cost(feasible(point, low, high))


def _box(
    width: int, lower: FloatArray | None, upper: FloatArray | None
) -> tuple[FloatArray, FloatArray]:
    """The bounds (default w ≥ 0, intercept included); an upper bound below the lower is
    raised to it."""
    low = np.zeros(width) if lower is None else lower
    high = np.full(width, np.inf) if upper is None else np.maximum(upper, low)
    return low, high


def least_squares(
    rows: FloatArray,
    latencies: FloatArray,
    lower: FloatArray | None = None,
    upper: FloatArray | None = None,
) -> float:
    """min ‖Xw − y‖² s.t. lower ≤ w ≤ upper (default w ≥ 0, intercept included), by cvxpy
    (Clarabel, tight tolerances, `_box_least_squares`)."""
    width = rows.shape[1]
    zero = np.zeros(width)
    return _box_least_squares(rows, latencies, _box(width, lower, upper), zero, zero)


def ridge_terms(rows: FloatArray, weight: float) -> FloatArray:
    """The per-coefficient weights N0·mean(x_j²) of the online prior (`fit._solve`)."""
    terms: FloatArray = weight * (rows**2).mean(axis=0)
    return terms


def penalized(
    model: LinearModel, rows: FloatArray, latencies: FloatArray, center: FloatArray, weight: float
) -> float:
    """‖Xw − y‖² + Σ_j N0·mean(x_j²)·(w_j − c_j)² of a model."""
    w = np.array([model.intercept, *model.weights])
    terms = ridge_terms(rows, weight)
    return float(((rows @ w - latencies) ** 2).sum() + (terms * (w - center) ** 2).sum())


def penalized_least_squares(
    rows: FloatArray,
    latencies: FloatArray,
    center: FloatArray,
    weight: float,
    lower: FloatArray | None = None,
    upper: FloatArray | None = None,
) -> float:
    """min ‖Xw − y‖² + Σ_j N0·mean(x_j²)·(w_j − c_j)² s.t. lower ≤ w ≤ upper (default w ≥ 0),
    by cvxpy (Clarabel, tight tolerances, `_box_least_squares`)."""
    bounds = _box(rows.shape[1], lower, upper)
    return _box_least_squares(rows, latencies, bounds, ridge_terms(rows, weight), center)
