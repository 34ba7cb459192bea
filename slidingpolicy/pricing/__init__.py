"""Pricing batches (eq. 4–6, 9): features, linear models, their fit, the priced queue, the split."""

from slidingpolicy.pricing.accuracy import FitReport, evaluate
from slidingpolicy.pricing.features import DECODE, MIXED, PREFILL, SCENARIOS, batch_features
from slidingpolicy.pricing.fit import fit_predictor, solve
from slidingpolicy.pricing.margin import calibrate_margin, held_out_ratios
from slidingpolicy.pricing.model import LatencyPredictor, LinearModel
from slidingpolicy.pricing.samples import PredictorStats, Sample, accumulate

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
