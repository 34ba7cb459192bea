"""Convex, non-decreasing lower envelopes of sampled costs, and their perspective.

A hardware model's iteration time is not convex in the token count (tile and wave steps,
measured dips). The bound needs a function below it that is convex and non-decreasing, so that
Jensen's inequality (and the linear program's mixing of iteration types) stays below every real
schedule. From samples f(1), ..., f(N) at every integer:

1. m(x) = min over x' ≥ x of f(x'): the largest non-decreasing function below f (an iteration
   that does more work never takes less time than m says, dips included);
2. the lower convex hull of the points (x, m(x)): the largest convex function below m. It is
   non-decreasing because its value at x = 1 is the minimum of m.

Between breakpoints the envelope is linear, so an iteration of x tokens costs exactly what the
mix of the two breakpoints around it costs (the linear program's types).
"""

from __future__ import annotations

import attrs
import numpy as np
from numpy.typing import NDArray

from slidingpolicy._arrays import float_read_only
from slidingpolicy.errors import InvalidRecordError

FloatArray = NDArray[np.float64]

ROUNDING = 1e-9
"""The envelope is lowered by this relative amount, so that float rounding in the hull and in
interpolation can never lift it above a sample (checked at every integer)."""


@attrs.frozen(slots=True)
class ConvexCost:
    """A convex, non-decreasing, piecewise-linear function on [points[0], points[-1]], given by
    its breakpoints: linear between them."""

    points: FloatArray = attrs.field(converter=float_read_only)
    values: FloatArray = attrs.field(converter=float_read_only)

    def __attrs_post_init__(self) -> None:
        x, y = self.points, self.values
        if x.ndim != 1 or x.shape != y.shape or x.size < 1:
            raise InvalidRecordError("convex cost", "points", "needs >= 1 point, one per value")
        if np.any(np.diff(x) <= 0) or np.any(np.diff(y) < 0) or not np.all(np.isfinite(y)):
            raise InvalidRecordError("convex cost", "values", "must rise with increasing points")
        if x.size > 2 and np.any(np.diff(self.slopes) < -1e-12 * max(1.0, float(y[-1]))):
            raise InvalidRecordError("convex cost", "values", "are not convex")

    @property
    def slopes(self) -> FloatArray:
        """The slope of each linear piece (one fewer than the points)."""
        slopes: FloatArray = np.diff(self.values) / np.diff(self.points)
        return slopes

    @property
    def intercepts(self) -> FloatArray:
        """Each piece's value at 0: the piece is slope · x + intercept."""
        intercepts: FloatArray = self.values[:-1] - self.slopes * self.points[:-1]
        return intercepts

    def __call__(self, x: FloatArray) -> FloatArray:
        """The envelope at x (clipped to its domain)."""
        values: FloatArray = np.interp(x, self.points, self.values)
        return values

    def perspective(self, total: FloatArray, count: FloatArray) -> FloatArray:
        """count · f(total / count): the least time `count` iterations take to do `total`
        (Jensen), each within the domain; elementwise, count > 0."""
        low: FloatArray = count * self.values[0]
        if self.points.size == 1:
            return low
        pieces = total[..., np.newaxis] * self.slopes + count[..., np.newaxis] * self.intercepts
        seconds: FloatArray = np.maximum(pieces.max(axis=-1), low)
        return seconds

    @classmethod
    def below(cls, samples: FloatArray) -> ConvexCost:
        """The envelope (module docstring) of f(1), ..., f(N) = `samples`."""
        if samples.ndim != 1 or samples.size < 1 or not np.all(np.isfinite(samples)):
            raise InvalidRecordError("convex cost", "samples", "must be finite, one per count")
        rising = np.minimum.accumulate(samples[::-1])[::-1]
        x = np.arange(1, samples.size + 1, dtype=np.float64)
        for turn in (1e-3 * ROUNDING, 0.0):
            hull = _lower_hull(x, rising, _corners(rising, turn))
            envelope = cls(x[hull], rising[hull] * (1.0 - ROUNDING))
            if np.all(envelope(x) <= samples):
                return envelope
        raise InvalidRecordError("convex cost", "samples", "no envelope below them in floats")


def _corners(y: FloatArray, turn: float) -> NDArray[np.int64]:
    """The ends and the points where y turns upward by more than `turn` of its value: any
    other point lies on its neighbours' chord or above it, or so little below that the
    envelope's `ROUNDING` margin covers it (`ConvexCost.below` checks, and retries with every
    upward turn)."""
    bend = y[2:] - 2.0 * y[1:-1] + y[:-2]
    inner = np.flatnonzero(bend > turn * np.abs(y[1:-1])) + 1
    ends = np.array([0, y.size - 1], dtype=np.int64)
    corners: NDArray[np.int64] = np.unique(np.concatenate([ends, inner]))
    return corners


def _lower_hull(x: FloatArray, y: FloatArray, candidates: NDArray[np.int64]) -> list[int]:
    """Indices of the lower convex hull of the candidate points, sorted by x (Andrew's
    monotone chain), keeping only corners (collinear points dropped)."""
    hull: list[int] = []
    for i in candidates.tolist():
        while len(hull) >= 2:
            a, b = hull[-2], hull[-1]
            cross = (x[b] - x[a]) * (y[i] - y[a]) - (y[b] - y[a]) * (x[i] - x[a])
            if cross > 0:
                break
            hull.pop()
        hull.append(i)
    return hull
