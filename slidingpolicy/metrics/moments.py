"""Means and standard deviations, and sums exact to the last bit."""

from __future__ import annotations

import math
from itertools import chain

import numpy as np

from slidingpolicy.metrics.percentiles import FloatArray, IntArray


def moments(values: FloatArray) -> tuple[float, float]:
    """Mean and population standard deviation of `values`; NaN for none."""
    if values.size == 0:
        return math.nan, math.nan
    mean = float(values.mean())
    return mean, float(np.sqrt(np.mean((values - mean) ** 2)))


def _split(a: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Dekker's split: a = high + low, each with at most 26 significant bits."""
    c = 134217729.0 * a  # 2^27 + 1
    high = c - (c - a)
    return high, a - high


def exact_sum(plain: FloatArray, values: FloatArray, weights: IntArray) -> float:
    """Σ plain + Σ weights·values, correctly rounded (`math.fsum` over the products made
    exact by Dekker's two-product): the same float however the terms are grouped."""
    w = weights.astype(np.float64)
    product = w * values
    wh, wl = _split(w)
    vh, vl = _split(values)
    error = ((wh * vh - product) + wh * vl + wl * vh) + wl * vl
    return math.fsum(chain(plain.tolist(), product.tolist(), error.tolist()))
