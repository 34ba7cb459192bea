"""Calibration: bounded least squares from sufficient statistics, offline and online.

Each scenario keeps XᵀX, Xᵀy, yᵀy and a (possibly discounted) sample count over the augmented
features [1, x1..x7]. Adding a sample is a pure function; refitting solves
min ‖Xw − y‖² over box constraints per scenario, from the statistics alone, in the order
that makes the predictor monotone across scenarios (proofs/monotonicity.md §5):

1. DECODE with w ≥ 0 and no x3 (on decode batches x3 = x5 exactly);
2. MIXED with w ≥ w_DECODE (a decode batch never gets slower by gaining prefill work);
3. PREFILL with 0 ≤ w ≤ w_MIXED (a prefill batch never gets slower by gaining a decode).

The samples and their statistics are `samples`, the margin `margin`, the held-out accuracy
`accuracy`; their names are re-exported here, where callers import them from.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import attrs
import numpy as np

from slidingpolicy.pricing.features import DECODE, MIXED, PREFILL, SCENARIOS, FloatArray
from slidingpolicy.pricing.margin import (
    FOLDS,
    calibrate_margin,
    held_out_ratios,
)
from slidingpolicy.pricing.model import LatencyPredictor, LinearModel
from slidingpolicy.pricing.samples import WIDTH, PredictorStats, Sample, accumulate

NARROW = 1e-12
"""A coefficient whose whole box moves the predictions by at most NARROW·‖y‖ is fixed, not
fitted: ‖x_j‖·(high_j − low_j) ≤ NARROW·max_k |x_kᵀy| / ‖x_k‖ (and max_k … ≤ ‖y‖). Such boxes
are the rounding noise one stage's optimum leaves in the next stage's bounds (w ≤ w_MIXED with
a weight of 1e-23); scipy's BVLS frees such a coefficient first, crosses its box for no gain
and stops on its cost-change rule, the others short of the optimum (proofs/test_fit.py,
NARROW_BOX)."""


def load_solver() -> None:
    """Import the bounded least-squares solver (scipy's) now: it costs a second per process,
    which a learner's first full refit would otherwise pay inside an engine's step."""
    import scipy.optimize  # noqa: F401


def no_x3(width: int = WIDTH) -> FloatArray:
    """Upper bounds that drop x3 (column 3 of [1, x1..x7(, x8)]) from the DECODE fit."""
    return np.array([0.0 if j == 3 else np.inf for j in range(width)])


def _row(model: LinearModel) -> FloatArray:
    return np.array([model.intercept, *model.weights])


def _model(row: FloatArray, count: float) -> LinearModel:
    return LinearModel(float(row[0]), tuple(float(w) for w in row[1:]), count)


def _solve(
    gram: FloatArray,
    moment: FloatArray,
    count: float,
    lower: FloatArray | None = None,
    upper: FloatArray | None = None,
    center: FloatArray | None = None,
    weight: float = 0.0,
) -> LinearModel:
    """min wᵀGw − 2mᵀw s.t. lower ≤ w ≤ upper (default 0 ≤ w), by bounded-variable least
    squares on the Cholesky factor of the column-scaled gram, its target scaled by a power of
    two to a largest entry in [0.5, 1): BVLS's stopping test bounds the gradient absolutely, so
    unscaled it stopped short on latencies of 1e-49 s; a power of two scales every step
    exactly, so the fit is scale-free (latencies × 2^k give coefficients × 2^k).

    With a `center` w0 and a `weight` N0 > 0 the objective gains N0·Σ_j (G_jj/n)(w_j − w0_j)²:
    N0 observations' worth of each coefficient's prior (the ridge form of a Gaussian prior on
    w, scaled by each feature's mean square). A column never observed, or boxed narrower than
    `NARROW`, takes w0 (clipped to its bounds), or its lower bound without a center.

    scipy is imported here, not at module load: it costs a second per process, and only
    fitting needs it (the scheduler and the engine only predict).
    """
    from scipy.optimize import lsq_linear

    width = moment.size
    low = np.zeros(width) if lower is None else np.asarray(lower, dtype=np.float64)
    high = np.full(width, np.inf) if upper is None else np.maximum(upper, low)
    coefficients = low.copy() if center is None else np.clip(center, low, high)
    diagonal = np.diag(gram).copy()
    if center is not None and weight > 0.0 and count > 0.0:
        penalty = weight * diagonal / count
        gram = gram + np.diag(penalty)
        moment = moment + penalty * center
    observed = diagonal > 0.0
    root = np.sqrt(np.diag(gram))
    size = float(np.max(np.abs(moment[observed]) / root[observed], initial=0.0))
    used = observed.copy()
    used[observed] = (high - low)[observed] * root[observed] > NARROW * size
    if count <= 0.0 or not used.any():
        return _model(coefficients, max(count, 0.0))
    fixed = ~used
    scale = root[used]
    scaled = gram[np.ix_(used, used)] / np.outer(scale, scale)
    rhs = (moment[used] - gram[np.ix_(used, fixed)] @ coefficients[fixed]) / scale
    jitter = 1e-12 * max(float(np.trace(scaled)), 1.0)
    factor = np.linalg.cholesky(scaled + jitter * np.eye(int(used.sum())))
    target = np.linalg.solve(factor, rhs)
    unit = -math.frexp(float(np.max(np.abs(target), initial=0.0)))[1]
    bounds = (np.ldexp(low[used] * scale, unit), np.ldexp(high[used] * scale, unit))
    result = lsq_linear(factor.T, np.ldexp(target, unit), bounds=bounds, method="bvls", tol=1e-14)
    coefficients[used] = np.clip(np.ldexp(result.x, -unit) / scale, low[used], high[used])
    return _model(coefficients, count)


def prior_scale(stats: PredictorStats, prior: LatencyPredictor) -> float:
    """α̂ = Σ_k w0_kᵀ m_k / Σ_k w0_kᵀ G_k w0_k: the factor by which the prior's predictions best
    fit the observed latencies in least squares (2 on a machine twice as slow); 1 without
    data."""
    rows = prior.coefficients
    fitted = sum(float(rows[k] @ stats.moment[k]) for k in range(len(SCENARIOS)))
    energy = sum(float(rows[k] @ stats.gram[k] @ rows[k]) for k in range(len(SCENARIOS)))
    return fitted / energy if energy > 0.0 and fitted > 0.0 else 1.0


def solve(
    stats: PredictorStats,
    min_samples: int = 30,
    source: str = "",
    prior: LatencyPredictor | None = None,
    prior_weight: float = 0.0,
    tile: int | None = None,
) -> LatencyPredictor:
    """Refit every scenario (eq. 6), monotone across scenarios: w_DECODE ≤ w_MIXED ≥ w_PREFILL
    elementwise, intercepts included.

    Offline (no `prior`), a scenario with fewer than `min_samples` observations takes the
    global model fitted on all samples. Online refits start from the offline `prior`:

    - with `prior_weight` N0 > 0, each scenario is the estimate under a prior centred on the
      prior's model scaled to the data (`prior_scale`), weighing N0 observations (`_solve`):
      what the engine's batches identify follows the data, what they leave open (collinear
      or unobserved features, a scenario barely seen) keeps the scaled prior;
    - with N0 = 0, a scenario with at least `min_samples` observations is the data's fit
      alone, and the others keep the prior's model.

    Each model is then raised (MIXED) or lowered (PREFILL) to the bound its order sets.
    The statistics' width says whether the batches carry a tile count: `tile` (offline) or
    the prior's (online) is the T they were counted with.
    """
    mapped = prior is not None and prior_weight > 0.0
    scale = prior_scale(stats, prior) if prior is not None and mapped else 1.0
    if prior is not None and (mapped or stats.count.sum() < min_samples):
        fallback = _model(scale * _row(prior.fallback), prior.fallback.samples)
    else:
        fallback = _solve(*stats.merged())

    def fit(k: int, lower: FloatArray | None, upper: FloatArray | None) -> LinearModel:
        count = float(stats.count[k])
        if prior is not None and mapped:
            center = scale * prior.coefficients[k]
            return _solve(stats.gram[k], stats.moment[k], count, lower, upper, center, prior_weight)
        if count >= min_samples:
            return _solve(stats.gram[k], stats.moment[k], count, lower, upper)
        return prior.models[k] if prior is not None else attrs.evolve(fallback, samples=count)

    def bounded(model: LinearModel, row: FloatArray) -> LinearModel:
        return model if np.array_equal(row, _row(model)) else _model(row, model.samples)

    decode = fit(DECODE, None, no_x3(stats.moment.shape[1]))
    mixed = fit(MIXED, _row(decode), None)
    mixed = bounded(mixed, np.maximum(_row(mixed), _row(decode)))
    prefill = fit(PREFILL, None, _row(mixed))
    prefill = bounded(prefill, np.minimum(_row(prefill), _row(mixed)))
    margin = 1.0 if prior is None else prior.margin
    tile = prior.tile if prior is not None else tile
    return LatencyPredictor(
        decode, prefill, mixed, fallback=fallback, source=source, margin=margin, tile=tile
    )


def in_order(predictor: LatencyPredictor) -> LatencyPredictor:
    """`predictor` in the fit's monotone order (w_DECODE ≤ w_MIXED ≥ w_PREFILL elementwise,
    intercepts included; proofs/monotonicity.md §5): MIXED raised to the elementwise largest
    of the three models, DECODE and PREFILL kept. Itself when already in order."""
    decode, prefill, mixed = predictor.coefficients
    top = np.maximum(mixed, np.maximum(decode, prefill))
    if np.array_equal(top, mixed):
        return predictor
    return attrs.evolve(predictor, mixed=_model(top, predictor.mixed.samples))


def fit_predictor(
    samples: Sequence[Sample], min_samples: int = 30, source: str = "", tile: int | None = None
) -> LatencyPredictor:
    """The monotone bounded least-squares predictor of `samples` (offline calibration, eq. 6),
    with its margin from FOLDS-fold cross-validation: each fold is predicted by a fit on the
    others, and the margin covers MARGIN_QUANTILE of those held-out ratios. With a `tile`,
    the tile-aware predictor (the eighth feature x8, `features.tile_count`)."""
    ratios: list[float] = []
    for fold in range(FOLDS):
        kept = [s for i, s in enumerate(samples) if i % FOLDS != fold]
        held = [s for i, s in enumerate(samples) if i % FOLDS == fold]
        fitted = solve(accumulate(kept, tile=tile), min_samples=min_samples, tile=tile)
        ratios += held_out_ratios(fitted, held)
    final = solve(accumulate(samples, tile=tile), min_samples=min_samples, source=source, tile=tile)
    return attrs.evolve(final, margin=calibrate_margin(ratios))
