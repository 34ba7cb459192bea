"""Measured noise: the measured / fitted latency ratios of an engine's steps, by step size.

A real engine's steps vary by more than a fit explains, and not alike at every size: on one
trace of the CPU engine in docs/hardware.md the median ratio is 1.37 for one-token steps and
0.41 for steps of 5–9 tokens under one least-squares fit. So the ratios are kept in `NOISE_BINS`
classes of the fitted (noise-free) latency, equally filled, none with fewer than
`MIN_BIN_STEPS` steps; a step draws its ratio from the class of its own fitted latency, at
the quantile Φ(z) of one standard normal z, linear between order statistics. The draw is a
deterministic, non-decreasing function of z, and for each class it follows the measured
distribution, tails included.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence

import attrs
import numpy as np

from slidingpolicy._arrays import read_only
from slidingpolicy.errors import InvalidRecordError
from slidingpolicy.hardware.batch_summary import FloatArray

NOISE_BINS = 4
"""Classes of fitted latency. On two traces of the CPU engine (docs/hardware.md, "A real
engine's measured steps") four classes of equal counts bring the medians of small and middle
steps close to the measured ones, where one pooled distribution was off by up to 2×."""
MIN_BIN_STEPS = 100
"""The fewest steps a class holds: fewer leave its p99 to one or two steps."""

RECORD = "ratio noise"


def normal_cdf(z: float) -> float:
    """Φ(z), the standard normal distribution function."""
    return 0.5 * math.erfc(-z / math.sqrt(2.0))


def _bins(value: Sequence[Sequence[float] | FloatArray]) -> tuple[FloatArray, ...]:
    return tuple(read_only(np.sort(np.asarray(b, dtype=np.float64))) for b in value)


def _edges(value: Sequence[float]) -> tuple[float, ...]:
    return tuple(float(e) for e in value)


@attrs.frozen(slots=True)
class RatioNoise:
    """`bins[k]`: the sorted ratios of the steps whose fitted latency lies between
    `edges[k-1]` (inclusive) and `edges[k]` (exclusive); the first and last bins are open."""

    edges: tuple[float, ...] = attrs.field(converter=_edges)
    bins: tuple[FloatArray, ...] = attrs.field(converter=_bins, eq=False)

    def __attrs_post_init__(self) -> None:
        if len(self.bins) != len(self.edges) + 1:
            raise InvalidRecordError(RECORD, "bins", "must be one more than the edges")
        if any(not low < high for low, high in zip(self.edges, self.edges[1:], strict=False)):
            raise InvalidRecordError(RECORD, "edges", "must increase")
        for k, ratios in enumerate(self.bins):
            if ratios.size == 0 or not np.all(np.isfinite(ratios)) or ratios[0] <= 0.0:
                raise InvalidRecordError(
                    RECORD, f"bins[{k}]", "must be a non-empty list of finite ratios > 0"
                )

    @classmethod
    def measured(
        cls,
        fitted: Sequence[float] | FloatArray,
        measured: Sequence[float] | FloatArray,
        bins: int = NOISE_BINS,
    ) -> RatioNoise:
        """The ratios measured / fitted of steps whose fitted latency is > 0, in at most `bins`
        classes of equal counts by fitted latency, each of at least `MIN_BIN_STEPS` steps
        (one class when there are fewer)."""
        f = np.asarray(fitted, dtype=np.float64)
        y = np.asarray(measured, dtype=np.float64)
        kept = (f > 0.0) & (y > 0.0)
        f, r = f[kept], y[kept] / f[kept]
        if r.size == 0:
            raise InvalidRecordError(RECORD, "bins", "no step with a latency above zero")
        count = max(1, min(bins, r.size // MIN_BIN_STEPS))
        edges = list(np.unique(np.quantile(f, np.linspace(0.0, 1.0, count + 1)[1:-1])))
        while edges:
            sizes = np.bincount(np.searchsorted(edges, f, side="right"), minlength=len(edges) + 1)
            small = int(np.argmin(sizes))
            if sizes[small] >= MIN_BIN_STEPS:
                break
            del edges[max(small - 1, 0)]
        where = np.searchsorted(edges, f, side="right")
        return cls(edges, [r[where == k] for k in range(len(edges) + 1)])

    @property
    def ratios(self) -> FloatArray:
        """Every class's ratios together, sorted."""
        return np.sort(np.concatenate(self.bins))

    def factor(self, latency: float, z: float) -> float:
        """The ratio at quantile Φ(z) of the class of fitted latency `latency`."""
        r = self.bins[bisect.bisect_right(self.edges, latency)]
        position = normal_cdf(z) * (r.size - 1)
        low = min(int(position), r.size - 1)
        high = min(low + 1, r.size - 1)
        return float(r[low] + (position - low) * (r[high] - r[low]))
