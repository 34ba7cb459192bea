"""Calibration: non-negative least squares from sufficient statistics, offline and online.

Each scenario keeps XᵀX, Xᵀy, yᵀy and a (possibly discounted) sample count over the augmented
features [1, x1..x7]. Adding a sample is a pure function; refitting solves
min ‖Xw − y‖² s.t. w ≥ 0 (intercept included) per scenario, from the statistics alone.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import numpy as np

from slidingpolicy import _validate
from slidingpolicy._arrays import read_only
from slidingpolicy.errors import InvalidRecordError
from slidingpolicy.predictor.features import (
    NUM_FEATURES,
    SCENARIOS,
    FloatArray,
    IntArray,
    batch_features,
)
from slidingpolicy.predictor.model import LatencyPredictor, LinearModel

WIDTH = NUM_FEATURES + 1


@attrs.frozen(slots=True)
class PredictorStats:
    """Sufficient statistics per scenario: gram (3×8×8), moment (3×8), yy (3), count (3)."""

    gram: FloatArray
    moment: FloatArray
    yy: FloatArray
    count: FloatArray

    @classmethod
    def empty(cls) -> PredictorStats:
        """No observations yet."""
        n = len(SCENARIOS)
        return cls(
            read_only(np.zeros((n, WIDTH, WIDTH))),
            read_only(np.zeros((n, WIDTH))),
            read_only(np.zeros(n)),
            read_only(np.zeros(n)),
        )

    def add(
        self, features: FloatArray, scenario: int, latency: float, forgetting: float = 1.0
    ) -> PredictorStats:
        """The statistics after one more observation; older ones are scaled by `forgetting`."""
        _validate.non_negative("predictor sample", "latency", latency)
        z = np.concatenate(([1.0], features))
        gram, moment = self.gram * forgetting, self.moment * forgetting
        yy, count = self.yy * forgetting, self.count * forgetting
        gram[scenario] += np.outer(z, z)
        moment[scenario] += latency * z
        yy[scenario] += latency * latency
        count[scenario] += 1.0
        return PredictorStats(read_only(gram), read_only(moment), read_only(yy), read_only(count))

    def merged(self) -> tuple[FloatArray, FloatArray, float]:
        """Gram, moment and count of all scenarios together (the global model's data)."""
        return self.gram.sum(axis=0), self.moment.sum(axis=0), float(self.count.sum())


def _solve(gram: FloatArray, moment: FloatArray, count: float) -> LinearModel:
    """min wᵀGw − 2mᵀw s.t. w ≥ 0, as NNLS on the Cholesky factor of the column-scaled gram.

    scipy is imported here, not at module load: it costs a second per process, and only
    fitting needs it (the scheduler and the engine only predict).
    """
    from scipy.optimize import nnls

    if count <= 0.0:
        return LinearModel(0.0, (0.0,) * NUM_FEATURES, 0.0)
    diagonal = np.diag(gram).copy()
    used = diagonal > 0.0
    scale = np.where(used, np.sqrt(np.where(used, diagonal, 1.0)), 1.0)
    scaled = gram[np.ix_(used, used)] / np.outer(scale[used], scale[used])
    rhs = moment[used] / scale[used]
    jitter = 1e-12 * max(float(np.trace(scaled)), 1.0)
    factor = np.linalg.cholesky(scaled + jitter * np.eye(int(used.sum())))
    target = np.linalg.solve(factor, rhs)
    solution, _ = nnls(factor.T, target)
    coefficients = np.zeros(WIDTH)
    coefficients[used] = solution / scale[used]
    return LinearModel(float(coefficients[0]), tuple(coefficients[1:]), count)


def solve(
    stats: PredictorStats,
    min_samples: int = 30,
    source: str = "",
    prior: LatencyPredictor | None = None,
) -> LatencyPredictor:
    """Refit every scenario with at least `min_samples` observations (eq. 6).

    A scenario with fewer keeps the `prior`'s model when one is given (online refits start
    from the offline predictor), and uses the global model fitted on all samples otherwise.
    """
    fallback = _solve(*stats.merged())
    if prior is not None and stats.count.sum() < min_samples:
        fallback = prior.fallback
    models = []
    for k in range(len(SCENARIOS)):
        count = float(stats.count[k])
        if count >= min_samples:
            models.append(_solve(stats.gram[k], stats.moment[k], count))
        elif prior is not None:
            models.append(prior.models[k])
        else:
            models.append(attrs.evolve(fallback, samples=count))
    decode, prefill, mixed = models
    return LatencyPredictor(decode, prefill, mixed, fallback=fallback, source=source)


def _ints(values: Sequence[int]) -> tuple[int, ...]:
    return tuple(values)


@attrs.frozen(slots=True)
class Sample:
    """One measured iteration: the batch's (c_i, u_i) and its latency in seconds."""

    chunks: tuple[int, ...] = attrs.field(converter=_ints)
    contexts: tuple[int, ...] = attrs.field(converter=_ints)
    latency: float

    def __attrs_post_init__(self) -> None:
        record = "predictor sample"
        _validate.non_negative(record, "latency", self.latency)
        if len(self.chunks) != len(self.contexts) or not self.chunks:
            raise InvalidRecordError(record, "chunks", "must be non-empty and as long as contexts")
        for c, u in zip(self.chunks, self.contexts, strict=True):
            _validate.integer(record, "chunks[i]", c, 1)
            _validate.integer(record, "contexts[i]", u, 0)

    def features(self) -> tuple[FloatArray, int]:
        """x1..x7 and the scenario of this batch."""
        chunks: IntArray = np.asarray(self.chunks, dtype=np.int64)
        contexts: IntArray = np.asarray(self.contexts, dtype=np.int64)
        return batch_features(chunks, contexts)


def accumulate(samples: Sequence[Sample], stats: PredictorStats | None = None) -> PredictorStats:
    """The statistics of `samples`, added to `stats` (or to empty ones)."""
    result = PredictorStats.empty() if stats is None else stats
    for sample in samples:
        x, scenario = sample.features()
        result = result.add(x, scenario, sample.latency)
    return result


def fit_predictor(
    samples: Sequence[Sample], min_samples: int = 30, source: str = ""
) -> LatencyPredictor:
    """The non-negative least-squares predictor of `samples` (offline calibration, §4.1)."""
    return solve(accumulate(samples), min_samples=min_samples, source=source)


@attrs.frozen(slots=True)
class FitReport:
    """Held-out error of one scenario: MAE and RMSE in seconds, R², sample count."""

    scenario: str
    samples: int
    mae: float
    rmse: float
    r2: float


def evaluate(predictor: LatencyPredictor, samples: Sequence[Sample]) -> tuple[FitReport, ...]:
    """MAE, RMSE and R² per scenario and over all samples ("all")."""
    rows: list[tuple[int, float, float]] = []
    for sample in samples:
        x, scenario = sample.features()
        rows.append((scenario, predictor.predict_features(x, scenario), sample.latency))
    reports = []
    for k, name in [*enumerate(SCENARIOS), (-1, "all")]:
        picked = [(p, y) for s, p, y in rows if k in (-1, s)]
        if not picked:
            continue
        predicted, actual = (np.array(v) for v in zip(*picked, strict=True))
        error = predicted - actual
        spread = float(((actual - actual.mean()) ** 2).sum())
        r2 = 1.0 - float((error**2).sum()) / spread if spread > 0 else float("nan")
        reports.append(
            FitReport(
                name,
                len(picked),
                float(np.abs(error).mean()),
                float(np.sqrt((error**2).mean())),
                r2,
            )
        )
    return tuple(reports)
