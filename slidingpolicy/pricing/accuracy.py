"""The predictor's held-out accuracy per scenario and per prefill-size class (Table 5)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import attrs
import numpy as np

from slidingpolicy.pricing.features import SCENARIOS, FloatArray
from slidingpolicy.pricing.model import LatencyPredictor
from slidingpolicy.pricing.samples import Sample

SIZE_CLASSES: tuple[tuple[str, int, float], ...] = (
    ("<64", 1, 63),
    ("64–511", 64, 511),
    ("≥512", 512, math.inf),
)
"""Prefill-size classes reported apart (name, fewest and most prefill tokens): a loaded
scheduler runs small chunks most, and a fit dominated by large batches misses them first;
64 and 512 are tile multiples on the built-in GPUs."""


@attrs.frozen(slots=True)
class FitReport:
    """Held-out error of one group of batches: MAE, RMSE and mean bias (T̂ − y) in seconds,
    R², sample count. Groups: each scenario, each prefill-size class (`SIZE_CLASSES`, batches
    with prefill work only) and "all"."""

    scenario: str
    samples: int
    mae: float
    rmse: float
    r2: float
    bias: float


def _groups(x: FloatArray, scenario: int) -> tuple[str, ...]:
    prefill = x[5]
    sized = tuple(name for name, low, high in SIZE_CLASSES if low <= prefill <= high)
    return (SCENARIOS[scenario], *sized, "all")


def evaluate(predictor: LatencyPredictor, samples: Sequence[Sample]) -> tuple[FitReport, ...]:
    """MAE, RMSE, R² and bias per scenario, per prefill-size class and over all samples;
    groups without samples are left out."""
    picked: dict[str, list[tuple[float, float]]] = {}
    for sample in samples:
        x, scenario = sample.features(predictor.tile)
        pair = (predictor.predict_features(x, scenario), sample.latency)
        for name in _groups(x, scenario):
            picked.setdefault(name, []).append(pair)
    reports = []
    for name in [*SCENARIOS, *(c[0] for c in SIZE_CLASSES), "all"]:
        if name not in picked:
            continue
        predicted, actual = (np.array(v) for v in zip(*picked[name], strict=True))
        error = predicted - actual
        spread = float(((actual - actual.mean()) ** 2).sum())
        r2 = 1.0 - float((error**2).sum()) / spread if spread > 0 else float("nan")
        reports.append(
            FitReport(
                name,
                len(predicted),
                float(np.abs(error).mean()),
                float(np.sqrt((error**2).mean())),
                r2,
                float(error.mean()),
            )
        )
    return tuple(reports)
