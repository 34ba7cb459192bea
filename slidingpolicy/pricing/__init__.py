"""Pricing batches (eq. 4–6, 9): features, linear models, their fit, the priced queue, the split."""

from slidingpolicy.pricing.features import DECODE, MIXED, PREFILL, SCENARIOS, batch_features
from slidingpolicy.pricing.fit import (
    FitReport,
    PredictorStats,
    Sample,
    accumulate,
    calibrate_margin,
    evaluate,
    fit_predictor,
    held_out_ratios,
    solve,
)
from slidingpolicy.pricing.model import LatencyPredictor, LinearModel

__all__ = [
    "DECODE",
    "MIXED",
    "PREFILL",
    "SCENARIOS",
    "FitReport",
    "LatencyPredictor",
    "LinearModel",
    "PredictorStats",
    "Sample",
    "accumulate",
    "batch_features",
    "calibrate_margin",
    "evaluate",
    "fit_predictor",
    "held_out_ratios",
    "solve",
]
