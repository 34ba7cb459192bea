"""Measured iterations and their sufficient statistics: each scenario keeps XᵀX, Xᵀy, yᵀy and a
(possibly discounted) sample count over the augmented features [1, x1..x7]; adding a sample
is a pure function, and the fit (`fit.solve`, eq. 6) reads the statistics alone."""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import numpy as np

from slidingpolicy import _validate
from slidingpolicy._arrays import read_only
from slidingpolicy.errors import InvalidRecordError
from slidingpolicy.pricing.features import (
    NUM_FEATURES,
    SCENARIOS,
    FloatArray,
    IntArray,
    batch_features,
)

WIDTH = NUM_FEATURES + 1


@attrs.frozen(slots=True)
class PredictorStats:
    """Sufficient statistics per scenario: gram (3×w×w), moment (3×w), yy (3), count (3), with
    w = 8 columns [1, x1..x7], or 9 with the tile count x8."""

    gram: FloatArray
    moment: FloatArray
    yy: FloatArray
    count: FloatArray

    @classmethod
    def empty(cls, tile: int | None = None) -> PredictorStats:
        """No observations yet (of batches with a tile count when `tile` is given)."""
        n, width = len(SCENARIOS), WIDTH + (tile is not None)
        return cls(
            read_only(np.zeros((n, width, width))),
            read_only(np.zeros((n, width))),
            read_only(np.zeros(n)),
            read_only(np.zeros(n)),
        )

    def add(
        self, features: FloatArray, scenario: int, latency: float, forgetting: float = 1.0
    ) -> PredictorStats:
        """The statistics after one more observation; older ones are scaled by `forgetting`."""
        _validate.non_negative("predictor sample", "latency", latency)
        return self.fold(
            features.reshape(1, -1), np.array([scenario]), np.array([latency]), forgetting
        )

    def fold(
        self,
        features: FloatArray,
        scenarios: IntArray,
        latencies: FloatArray,
        forgetting: float = 1.0,
        weights: FloatArray | None = None,
    ) -> PredictorStats:
        """The statistics after the observations in the rows of `features` (with their
        `scenarios` and `latencies`), in order: after k of them, what came before weighs
        forgetting^k and row i forgetting^(k−1−i), as k calls of `add` would weigh them (one
        product per scenario; a single row gives `add`'s very bits). With `weights`, row i's
        squared error also weighs weights[i] (weighted least squares); the count still counts
        observations, so that a prior's weight (`solve`) stays in observations."""
        k = len(latencies)
        if k == 0:
            return self
        z = np.hstack((np.ones((k, 1)), features))
        kept = forgetting ** np.arange(k - 1, -1, -1, dtype=np.float64)
        weighed = kept if weights is None else kept * weights
        decay = forgetting**k
        gram, moment = self.gram * decay, self.moment * decay
        yy, count = self.yy * decay, self.count * decay
        for scenario in np.unique(scenarios).tolist():
            rows = scenarios == scenario
            zs, ws, ys = z[rows], weighed[rows], latencies[rows]
            gram[scenario] += zs.T @ (ws[:, None] * zs)
            moment[scenario] += zs.T @ (ws * ys)
            yy[scenario] += ws @ (ys * ys)
            count[scenario] += kept[rows].sum()
        return PredictorStats(read_only(gram), read_only(moment), read_only(yy), read_only(count))

    def merged(self) -> tuple[FloatArray, FloatArray, float]:
        """Gram, moment and count of all scenarios together (the global model's data)."""
        return self.gram.sum(axis=0), self.moment.sum(axis=0), float(self.count.sum())


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

    def features(self, tile: int | None = None) -> tuple[FloatArray, int]:
        """x1..x7 (and x8 with a `tile`) and the scenario of this batch."""
        chunks: IntArray = np.asarray(self.chunks, dtype=np.int64)
        contexts: IntArray = np.asarray(self.contexts, dtype=np.int64)
        return batch_features(chunks, contexts, tile)


def accumulate(
    samples: Sequence[Sample], stats: PredictorStats | None = None, tile: int | None = None
) -> PredictorStats:
    """The statistics of `samples` (with tile counts for a `tile`), added to `stats` (or to
    empty ones)."""
    result = PredictorStats.empty(tile) if stats is None else stats
    for sample in samples:
        x, scenario = sample.features(tile)
        result = result.add(x, scenario, sample.latency)
    return result
