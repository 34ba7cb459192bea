"""Ground-truth hardware latency models: the roofline and the measured-profile model."""

from __future__ import annotations

from slidingpolicy.hardware.build import build_hardware, default_hardware
from slidingpolicy.hardware.catalog import GPU, GPUS, MODELS, ModelShape, gpu, model
from slidingpolicy.hardware.profiled import ProfiledModel
from slidingpolicy.hardware.protocol import HardwareModel
from slidingpolicy.hardware.roofline import KV_BLOCK_SIZE, RooflineModel

__all__ = [
    "GPU",
    "GPUS",
    "KV_BLOCK_SIZE",
    "MODELS",
    "HardwareModel",
    "ModelShape",
    "ProfiledModel",
    "RooflineModel",
    "build_hardware",
    "default_hardware",
    "gpu",
    "model",
]
