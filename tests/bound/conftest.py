"""Shared pieces of the bound suites: every built-in hardware model, noise-free, with its
iteration cost built once, and the packaged predictor of its roofline for the policies."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from slidingpolicy.bound.cost import IterationCost, iteration_cost
from slidingpolicy.hardware import HardwareModel
from slidingpolicy.hardware.build import QUANTIZED
from slidingpolicy.predictors.locations import packaged_path
from slidingpolicy.pricing import LatencyPredictor
from slidingpolicy.runs.specs import HardwareSpec

HARDWARE = (
    HardwareSpec("rtx3090", "qwen2.5-7b", 2, noise_sigma=0.0),
    HardwareSpec("a100-80g", "llama3-8b", 1, noise_sigma=0.0),
    HardwareSpec("h100", "qwen2.5-7b", 1, noise_sigma=0.0),
    HardwareSpec("rtx3090-quantized", "qwen2.5-7b", 2, noise_sigma=0.0),
    HardwareSpec("a100-80g-quantized", "llama3-8b", 1, noise_sigma=0.0),
    HardwareSpec("h100-quantized", "qwen2.5-7b", 1, noise_sigma=0.0),
    HardwareSpec("a100-80g-measured", "llama3-8b", 1, noise_sigma=0.0),
)
"""Every built-in hardware name (`hardware.hardware_names`), each on a model it runs."""

RATE_SCALE = {"rtx3090": 2.0, "a100-80g": 4.0, "h100": 8.0}
"""Requests per second about where each GPU's capacity lies (to aim random rates there)."""


def base_gpu(spec: HardwareSpec) -> str:
    """The plain GPU under a hardware name."""
    return spec.gpu.removesuffix(QUANTIZED).removesuffix("-measured")


@cache
def hardware(spec: HardwareSpec) -> HardwareModel:
    """The model, built once."""
    return spec.build()


@cache
def cost(spec: HardwareSpec) -> IterationCost:
    """Its iteration cost, built once."""
    return iteration_cost(hardware(spec))


def predictor_path(spec: HardwareSpec) -> Path:
    """The packaged predictor of the plain roofline under `spec` (no fit needed)."""
    return packaged_path(base_gpu(spec), spec.model, spec.tp)


@cache
def predictor(spec: HardwareSpec) -> LatencyPredictor:
    """That predictor, loaded once."""
    return LatencyPredictor.load(predictor_path(spec))
