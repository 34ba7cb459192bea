"""The default predictor, fitted on the default hardware, reaches R² ≥ 0.99 on held-out batches."""

from __future__ import annotations

from slidingpolicy import default_predictor
from slidingpolicy.hardware import default_hardware
from slidingpolicy.predictors.profiling import profile
from slidingpolicy.pricing import evaluate


def test_default_predictor_r2_on_held_out_samples() -> None:
    held_out = profile(default_hardware(), 1500, seed=12345)
    reports = {r.scenario: r for r in evaluate(default_predictor(), held_out)}
    assert set(reports) == {"decode", "prefill", "mixed", "<64", "64–511", "≥512", "all"}
    for report in reports.values():
        assert report.r2 >= 0.99, report
        assert report.mae < 0.01
