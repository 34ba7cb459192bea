"""The predictors of the built-in hardware: the packaged defaults (`packaged/`, one JSON file per
profile), how they are made (`profiling`: calibration batches sampled from a hardware model), and
the predictor of any other hardware, fitted on first use and cached (`calibration`); where the
packaged files are (`locations`).

This package sits above `pricing` (the predictor) and `hardware` (the models it is fitted on);
the policy library below never imports it. The packaged files are written by
`slidingpolicy fit --hardware …` (`profiling.make_default`) from the roofline model with a fixed
seed, never edited by hand.
"""

from __future__ import annotations

from slidingpolicy import _validate
from slidingpolicy.predictors.locations import packaged_path
from slidingpolicy.pricing.model import LatencyPredictor


def default_predictor(
    gpu: str = "rtx3090", model: str = "qwen2.5-7b", tp: int = 2
) -> LatencyPredictor:
    """The packaged predictor of a built-in hardware profile (qwen2.5-7b on 2× RTX 3090 by
    default; not calibrated for your hardware: `slidingpolicy fit` yours), fitted afresh
    from the profile's roofline model if none is packaged."""
    for field, name in (("gpu", gpu), ("model", model)):
        if not isinstance(name, str):
            raise _validate.fail("default_predictor", field, f"must be a name, got {name!r}")
    _validate.integer("default_predictor", "tp", tp, 1)
    path = packaged_path(gpu, model, tp)
    if path.is_file():
        return LatencyPredictor.load(path)
    from slidingpolicy.predictors.profiling import make_default  # the hardware, only when needed

    return make_default(gpu, model, tp)
