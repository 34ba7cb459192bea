"""Building a hardware model by name: the default is the paper's, qwen2.5-7b on 2× rtx3090."""

from __future__ import annotations

from pathlib import Path

from slidingpolicy.hardware.catalog import gpu as find_gpu
from slidingpolicy.hardware.catalog import model as find_model
from slidingpolicy.hardware.profiled import ProfiledModel
from slidingpolicy.hardware.protocol import HardwareModel
from slidingpolicy.hardware.roofline import RooflineModel

DEFAULT_NOISE_SIGMA = 0.02


def build_hardware(
    gpu: str = "rtx3090",
    model: str = "qwen2.5-7b",
    tp: int = 2,
    profile: Path | None = None,
    noise_sigma: float = DEFAULT_NOISE_SIGMA,
) -> HardwareModel:
    """The roofline model of `model` on `tp` × `gpu`, or the profiled one when given a CSV."""
    roofline = RooflineModel(find_gpu(gpu), find_model(model), tp, noise_sigma=noise_sigma)
    if profile is None:
        return roofline
    return ProfiledModel.from_csv(profile, roofline)


def default_hardware() -> HardwareModel:
    """qwen2.5-7b on 2× rtx3090 (TP2), the SlidingServe evaluation's setup."""
    return build_hardware()
