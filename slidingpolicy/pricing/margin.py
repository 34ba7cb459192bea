"""The latency margin m ≥ 1 a policy plans T̂·m with: a quantile of the held-out ratios y / T̂."""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from statistics import NormalDist

import numpy as np

from slidingpolicy.pricing.features import DECODE, FloatArray
from slidingpolicy.pricing.model import LatencyPredictor
from slidingpolicy.pricing.samples import Sample

MARGIN_QUANTILE = 0.999
"""The margin covers this share of held-out batches (`calibrate_margin`). An iteration that
overruns T_cur costs at least one request its SLO; capacity allows 1% of requests to miss,
and at capacity on mixed-v1 a request spends about 2.5 iterations on the chunker path, so
overruns must stay well under 0.4% of iterations (docs/decisions.md has the measurement)."""
MARGIN_FLOOR = 0.02
"""Batches predicted under this many seconds do not set the margin: no deadline a policy
meets binds there (the tightest TBT SLO is 50 ms, and on mixed-v1 the chunker's binding
T_cur is ≥ 96 ms in 99% of iterations; docs/decisions.md)."""
FOLDS = 5
"""The margin is calibrated by FOLDS-fold cross-validation: every sample is held out once."""


def held_out_ratios(
    predictor: LatencyPredictor, samples: Sequence[Sample], floor: float = MARGIN_FLOOR
) -> list[float]:
    """y / T̂ on the `samples` that carry prefill work (the batches a policy chooses) and are
    predicted at ≥ `floor` seconds."""
    ratios = []
    for sample in samples:
        x, scenario = sample.features(predictor.tile)
        predicted = predictor.predict_features(x, scenario)
        if scenario != DECODE and predicted >= floor:
            ratios.append(sample.latency / predicted)
    return ratios


def calibrate_margin(
    ratios: Sequence[float] | FloatArray, quantile: float = MARGIN_QUANTILE
) -> float:
    """The smallest m ≥ 1 with y ≤ m·T̂ on a `quantile` share of the held-out `ratios`."""
    if len(ratios) == 0:
        return 1.0
    return max(1.0, float(np.quantile(ratios, quantile, method="higher")))


LARGEST_EXPONENT = math.log(sys.float_info.max)


def log_normal_margin(ratios: FloatArray, quantile: float = MARGIN_QUANTILE) -> float:
    """exp(μ + z_q·σ) over the logs of the positive `ratios` (at least 1): the `quantile` of
    the log-normal fitted to them. n ratios show the empirical quantile only down to their
    1/n tail; the fit reaches past it (a heavy tail, which it under-states, then shows in the
    empirical one). 1 with fewer than two ratios; inf where the fit's quantile overflows."""
    logs = np.log(ratios[ratios > 0.0])
    if len(logs) < 2:
        return 1.0
    exponent = float(logs.mean() + NormalDist().inv_cdf(quantile) * logs.std(ddof=1))
    return math.exp(exponent) if exponent < LARGEST_EXPONENT else math.inf
