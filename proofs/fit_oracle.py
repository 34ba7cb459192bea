"""Oracle for the calibration (§4.1): cvxpy's bounded least squares per scenario."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from proofs.milp import cp, solution
from slidingpolicy.pricing.features import FloatArray
from slidingpolicy.pricing.fit import Sample
from slidingpolicy.pricing.model import LinearModel


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
    Clarabel's feasibility tolerance (1e-12) is absolute, so at latencies of 1e-44 its point
    may leave a box [0, 0] and undercut the optimum (test_fit, ZERO_BOX)."""
    clipped: FloatArray = np.clip(point, low, high)
    return clipped


def least_squares(
    rows: FloatArray,
    latencies: FloatArray,
    lower: FloatArray | None = None,
    upper: FloatArray | None = None,
) -> float:
    """min ‖Xw − y‖² s.t. lower ≤ w ≤ upper (default w ≥ 0, intercept included), by cvxpy
    (Clarabel, tight tolerances).

    Columns are scaled to unit norm first (bounds scale with them); all-zero columns are
    dropped (their weight does not change the residual). The residual is that of cvxpy's
    point clipped to the bounds (`feasible`).
    """
    width = rows.shape[1]
    low = np.zeros(width) if lower is None else lower
    high = np.full(width, np.inf) if upper is None else np.maximum(upper, low)
    norms = np.linalg.norm(rows, axis=0)
    used = norms > 0
    scaled = rows[:, used] / norms[used]
    w = cp.Variable(int(used.sum()))
    constraints = [w >= low[used] * norms[used]]
    finite = np.isfinite(high[used])
    if finite.any():
        constraints.append(w[np.flatnonzero(finite)] <= (high[used] * norms[used])[finite])
    problem = cp.Problem(cp.Minimize(cp.sum_squares(scaled @ w - latencies)), constraints)
    problem.solve(
        solver=cp.CLARABEL, tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12, max_iter=500
    )
    found = feasible(solution(w), low[used] * norms[used], high[used] * norms[used])
    return float(((scaled @ found - latencies) ** 2).sum())


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
    by cvxpy (Clarabel, tight tolerances), on unit-norm columns; all-zero columns are dropped
    (neither term depends on them). The objective is that of cvxpy's point clipped to the
    bounds (`feasible`)."""
    width = rows.shape[1]
    low = np.zeros(width) if lower is None else lower
    high = np.full(width, np.inf) if upper is None else np.maximum(upper, low)
    norms = np.linalg.norm(rows, axis=0)
    used = norms > 0
    scaled = rows[:, used] / norms[used]
    terms = ridge_terms(rows, weight)[used] / norms[used] ** 2
    goal = center[used] * norms[used]
    w = cp.Variable(int(used.sum()))
    constraints = [w >= low[used] * norms[used]]
    finite = np.isfinite(high[used])
    if finite.any():
        constraints.append(w[np.flatnonzero(finite)] <= (high[used] * norms[used])[finite])
    cost = cp.sum_squares(scaled @ w - latencies) + cp.sum(cp.multiply(terms, (w - goal) ** 2))
    problem = cp.Problem(cp.Minimize(cost), constraints)
    problem.solve(
        solver=cp.CLARABEL, tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12, max_iter=500
    )
    found = feasible(solution(w), low[used] * norms[used], high[used] * norms[used])
    return float(((scaled @ found - latencies) ** 2).sum() + (terms * (found - goal) ** 2).sum())
