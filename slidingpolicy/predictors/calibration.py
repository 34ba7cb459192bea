"""The predictor of the hardware a run uses: packaged where one ships, else fitted on first use
and cached by the hardware model's content.

A run's policy predicts latencies with a predictor calibrated on the hardware the engine
measures against. The package ships one for each plain roofline in
`profiling.DEFAULT_PROFILES`; any other model (a quantized roofline, a measured table, a profile
CSV, another model or TP) is sampled and fitted with the package's own calibration
(`profiling.profile`, `fit.fit_predictor`, the default sample count and seed, so the same as
`profiling.make_default`), once. A model that quantizes its GEMMs to tiles gets the
tile-aware predictor (`calibration_tile`: x8 counts the tallest tile its library picks from),
which sees the steps a plain linear fit smooths over. The predictor is kept in a cache folder
under a name that is a hash of

- the hardware model's content: its type and every field it was built from (GPU, model shape,
  TP, efficiencies, noise, tiles, measured grid and seconds),
- the fit's settings: the sample count, the seed and the tile, and
- the calibration and hardware code (every module of `slidingpolicy.pricing` and
  `slidingpolicy.hardware`, `slidingpolicy.predictors.profiling` and this module), so that a
  change to any of them refits rather than reuses.

The folder is $SLIDINGPOLICY_CACHE, else $XDG_CACHE_HOME/slidingpolicy, else
~/.cache/slidingpolicy; predictors go in its ``predictors`` subfolder. A cached file that cannot
be read as a predictor is refitted and replaced, with a warning naming it.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import attrs
import numpy as np

import slidingpolicy.hardware
import slidingpolicy.predictors.profiling
import slidingpolicy.pricing
from slidingpolicy._paths import StrPath
from slidingpolicy.errors import SlidingPolicyError
from slidingpolicy.hardware import HardwareModel, QuantizedRooflineModel
from slidingpolicy.predictors import default_predictor
from slidingpolicy.predictors.profiling import (
    DEFAULT_PROFILES,
    DEFAULT_SAMPLES,
    DEFAULT_SEED,
    profile,
)
from slidingpolicy.pricing import LatencyPredictor
from slidingpolicy.pricing.fit import fit_predictor

CACHE_ENV = "SLIDINGPOLICY_CACHE"


def cache_dir() -> Path:
    """The folder cached predictors go in (module docstring)."""
    root = os.environ.get(CACHE_ENV)
    if root:
        return Path(root) / "predictors"
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "slidingpolicy" / "predictors"


def predictor_for(
    gpu: str, model: str, tp: int, build: Callable[[], HardwareModel], plain: bool = True
) -> LatencyPredictor:
    """The packaged predictor of a plain roofline (`plain`: no profile CSV) that has one; else
    `calibrated` on the hardware `build` makes."""
    if plain and (gpu, model, tp) in DEFAULT_PROFILES:
        return default_predictor(gpu, model, tp)
    return calibrated(build())


def calibrated(hardware: HardwareModel, folder: StrPath | None = None) -> LatencyPredictor:
    """The predictor fitted on `hardware`, from the cache in `folder` (default `cache_dir()`)
    when it holds one for this content, else fitted now and cached."""
    folder = None if folder is None else Path(folder)
    path = (folder or cache_dir()) / f"{fingerprint(hardware)}.json"
    if path.is_file():
        try:
            return LatencyPredictor.load(path)
        except SlidingPolicyError as error:
            warnings.warn(f"refitting: bad cached predictor {path} ({error})", stacklevel=2)
    samples = profile(hardware, DEFAULT_SAMPLES, DEFAULT_SEED)
    predictor = fit_predictor(samples, source=hardware.name, tile=calibration_tile(hardware))
    _save(predictor, path)
    return predictor


def calibration_tile(hardware: HardwareModel) -> int | None:
    """The tile T of the predictor fitted on `hardware`: for a tile-quantized model, the
    tallest tile its GEMM library picks from (the one it runs at the batch sizes a loaded
    scheduler prices; on the built-in GPUs it predicts held-out batches best of their
    heights); none for a model without tiles."""
    if isinstance(hardware, QuantizedRooflineModel):
        return max(tile.rows for tile in hardware.tiling.tiles)
    return None


def _save(predictor: LatencyPredictor, path: Path) -> None:
    """Write atomically (a process pool's workers may race to the same file)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        os.close(handle)
        predictor.save(Path(temporary))
        os.replace(temporary, path)
    except OSError as error:
        warnings.warn(f"cannot cache the predictor in {path.parent} ({error})", stacklevel=3)


def fingerprint(hardware: HardwareModel) -> str:
    """A hash of the hardware model's content, the fit's settings, and the calibration and
    hardware code."""
    if not attrs.has(type(hardware)):
        raise SlidingPolicyError(f"hardware {hardware.name!r}: not an attrs record, no content")
    content = attrs.asdict(
        cast(attrs.AttrsInstance, hardware), filter=lambda a, _: a.init, value_serializer=_plain
    )
    document = json.dumps(
        {
            "type": type(hardware).__qualname__,
            "content": content,
            "samples": DEFAULT_SAMPLES,
            "seed": DEFAULT_SEED,
            "tile": calibration_tile(hardware),
            "code": _code_digest(),
        },
        sort_keys=True,
    )
    return hashlib.sha256(document.encode()).hexdigest()[:32]


def _plain(_: object, __: object, value: Any) -> Any:
    """JSON values for what attrs records hold: numpy arrays as lists of floats."""
    if isinstance(value, np.ndarray):
        return [float(v) for v in value.tolist()]
    return value


@functools.cache
def _code_digest() -> str:
    """A hash of the source of the pricing and hardware packages, of the profiler and of this
    module."""
    digest = hashlib.sha256()
    sources = [Path(slidingpolicy.predictors.profiling.__file__), Path(__file__)]
    for package in (slidingpolicy.pricing, slidingpolicy.hardware):
        sources += Path(package.__file__ or "").parent.glob("*.py")
    for source in sorted(sources):
        digest.update(source.name.encode())
        digest.update(source.read_bytes())
    return digest.hexdigest()
