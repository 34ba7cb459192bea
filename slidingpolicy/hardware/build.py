"""Building a hardware model by name: the default is the paper's, qwen2.5-7b on 2× rtx3090.

A hardware name is a GPU and its latency model:

- ``<gpu>`` (rtx3090, a100-80g, h100): the smooth roofline (`roofline.RooflineModel`);
- ``<gpu>-quantized``: the roofline with tile- and wave-quantized GEMMs
  (`quantized.QuantizedRooflineModel`);
- ``<gpu>-measured`` (a100-80g-measured): measured dense time packaged with the library
  (`measured`), attention and the rest from ``<gpu>``'s roofline;
- ``<gpu>`` with a profile CSV: measured dense time read from that file (`profiled`);
- a real engine's step traces, in place of a name: its latency and noise as measured
  (`traced`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from slidingpolicy._paths import StrPath
from slidingpolicy.errors import InvalidRecordError, UnknownNameError
from slidingpolicy.hardware.catalog import GPUS
from slidingpolicy.hardware.catalog import gpu as find_gpu
from slidingpolicy.hardware.catalog import model as find_model
from slidingpolicy.hardware.measured import MeasuredTable, read_tables
from slidingpolicy.hardware.profiled import ProfiledModel
from slidingpolicy.hardware.protocol import HardwareModel
from slidingpolicy.hardware.quantized import TILINGS, QuantizedRooflineModel
from slidingpolicy.hardware.roofline import RooflineModel
from slidingpolicy.hardware.traced import traced_model

DEFAULT_NOISE_SIGMA = 0.02
QUANTIZED = "-quantized"

MEASURED: dict[str, MeasuredTable] = {t.name: t for t in read_tables()}
"""The packaged measured tables, by hardware name."""


def hardware_names() -> tuple[str, ...]:
    """Every built-in hardware name: rooflines, quantized rooflines, measured tables."""
    return (*GPUS, *(f"{g}{QUANTIZED}" for g in TILINGS), *MEASURED)


def build_hardware(
    gpu: str = "rtx3090",
    model: str = "qwen2.5-7b",
    tp: int = 2,
    profile: StrPath | None = None,
    noise_sigma: float = DEFAULT_NOISE_SIGMA,
    trace: Sequence[StrPath] = (),
) -> HardwareModel:
    """The hardware model `gpu` names (module docstring) for `model` on `tp` GPUs, the
    profiled one when given a CSV, or the model of a real engine's step traces, which
    replaces the name, model, TP and noise."""
    profile = None if profile is None else Path(profile)
    if trace:
        if profile is not None:
            raise InvalidRecordError(
                "hardware from a step trace",
                "profile",
                "a trace measures the whole latency; a profile CSV cannot replace part of it",
            )
        return traced_model(trace)
    if gpu in MEASURED:
        _no_profile(gpu, profile)
        return MEASURED[gpu].build(model, tp, noise_sigma)
    base = gpu.removesuffix(QUANTIZED)
    if base != gpu and base in TILINGS:
        _no_profile(gpu, profile)
        roofline = RooflineModel(find_gpu(base), find_model(model), tp, noise_sigma=noise_sigma)
        return QuantizedRooflineModel(roofline, TILINGS[base])
    if gpu not in GPUS:
        raise UnknownNameError("hardware", gpu, hardware_names())
    roofline = RooflineModel(find_gpu(gpu), find_model(model), tp, noise_sigma=noise_sigma)
    if profile is None:
        return roofline
    return ProfiledModel.from_csv(profile, roofline)


def _no_profile(name: str, profile: Path | None) -> None:
    if profile is not None:
        raise InvalidRecordError(
            f"hardware {name!r}",
            "profile",
            "a profile CSV replaces the dense time of a plain roofline; name a GPU without a "
            "suffix (e.g. a100-80g) to use it",
        )


def default_hardware() -> HardwareModel:
    """qwen2.5-7b on 2× rtx3090 (TP2), the SlidingServe evaluation's setup."""
    return build_hardware()
