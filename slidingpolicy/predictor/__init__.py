"""The batch latency predictor of §4.1: features, linear models, calibration."""

from slidingpolicy.predictor.features import DECODE, MIXED, PREFILL, SCENARIOS, batch_features
from slidingpolicy.predictor.fit import (
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
from slidingpolicy.predictor.model import LatencyPredictor, LinearModel

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
