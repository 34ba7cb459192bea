"""Ground-truth hardware latency models: the roofline, the tile-quantized roofline and the
measured-profile model (from a packaged table or a Vidur CSV)."""

from __future__ import annotations

from slidingpolicy.hardware.build import build_hardware, default_hardware, hardware_names
from slidingpolicy.hardware.catalog import GPU, GPUS, MODELS, ModelShape, gpu, model
from slidingpolicy.hardware.profiled import ProfiledModel
from slidingpolicy.hardware.protocol import HardwareModel
from slidingpolicy.hardware.quantized import GemmTiling, QuantizedRooflineModel, Tile
from slidingpolicy.hardware.roofline import KV_BLOCK_SIZE, RooflineModel

__all__ = [
    "GPU",
    "GPUS",
    "KV_BLOCK_SIZE",
    "MODELS",
    "GemmTiling",
    "HardwareModel",
    "ModelShape",
    "ProfiledModel",
    "QuantizedRooflineModel",
    "RooflineModel",
    "Tile",
    "build_hardware",
    "default_hardware",
    "gpu",
    "hardware_names",
    "model",
]
