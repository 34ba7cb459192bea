"""Each run's predictor is calibrated to its hardware: packaged, or fitted once and cached by
the hardware model's content."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import attrs
import numpy as np
import pytest

from slidingpolicy import default_predictor
from slidingpolicy.hardware import QuantizedRooflineModel, build_hardware
from slidingpolicy.hardware.quantized import TILINGS
from slidingpolicy.predictors import calibration
from slidingpolicy.predictors.calibration import calibrated, fingerprint
from slidingpolicy.predictors.profiling import DEFAULT_SAMPLES, DEFAULT_SEED, profile
from slidingpolicy.pricing import LatencyPredictor, Sample, fit_predictor
from slidingpolicy.runs import HardwareSpec


@pytest.fixture
def fits(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the hardware models fitted during the test."""
    fitted: list[str] = []

    def counting(
        samples: Sequence[Sample], source: str = "", tile: int | None = None
    ) -> LatencyPredictor:
        fitted.append(source)
        return fit_predictor(samples, source=source, tile=tile)

    monkeypatch.setattr(calibration, "fit_predictor", counting)
    return fitted


@pytest.mark.slow
def test_a_model_without_a_packaged_predictor_is_fitted_once_then_reused(
    tmp_path: Path, fits: list[str]
) -> None:
    hw = build_hardware("a100-80g-quantized", "llama3-8b", 1)
    first = calibrated(hw, tmp_path)
    again = calibrated(build_hardware("a100-80g-quantized", "llama3-8b", 1), tmp_path)
    assert fits == [hw.name]
    assert again.to_dict() == first.to_dict()
    assert [p.name for p in tmp_path.iterdir()] == [f"{fingerprint(hw)}.json"]


@pytest.mark.slow
def test_the_cache_is_keyed_by_content(tmp_path: Path, fits: list[str]) -> None:
    quiet = build_hardware("a100-80g-quantized", "llama3-8b", 1, noise_sigma=0.0)
    noisy = build_hardware("a100-80g-quantized", "llama3-8b", 1, noise_sigma=0.05)
    measured = build_hardware("a100-80g-measured", "llama3-8b", 1)
    assert len({fingerprint(quiet), fingerprint(noisy), fingerprint(measured)}) == 3
    for hw in (quiet, noisy, measured, quiet):
        calibrated(hw, tmp_path)
    assert len(fits) == 3
    assert len(list(tmp_path.iterdir())) == 3


def test_a_tiling_change_is_a_new_key() -> None:
    hw = build_hardware("a100-80g-quantized", "llama3-8b", 1)
    assert isinstance(hw, QuantizedRooflineModel)
    other = attrs.evolve(hw, tiling=attrs.evolve(hw.tiling, sms=100))
    assert fingerprint(other) != fingerprint(hw)


@pytest.mark.slow
def test_a_bad_cache_file_is_refitted_with_a_warning(tmp_path: Path, fits: list[str]) -> None:
    hw = build_hardware("h100-quantized", "llama3-8b", 1)
    path = tmp_path / f"{fingerprint(hw)}.json"
    path.write_text("{not json")
    with pytest.warns(UserWarning, match="bad cached predictor"):
        predictor = calibrated(hw, tmp_path)
    assert fits == [hw.name]
    assert LatencyPredictor.load(path).to_dict() == predictor.to_dict()


@pytest.mark.slow
def test_an_unwritable_cache_still_gives_the_predictor(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("")
    with pytest.warns(UserWarning, match="cannot cache"):
        predictor = calibrated(build_hardware("h100-quantized", "llama3-8b", 1), blocked)
    assert predictor.source.endswith("tile-quantized")


def test_packaged_hardware_keeps_its_packaged_predictor(fits: list[str]) -> None:
    spec = HardwareSpec("rtx3090", "qwen2.5-7b", 2)
    assert spec.predictor().to_dict() == default_predictor("rtx3090", "qwen2.5-7b", 2).to_dict()
    assert fits == []


@pytest.mark.slow
def test_a_profile_csv_gets_a_predictor_fitted_on_the_profile(
    vidur_profile: Path, fits: list[str]
) -> None:
    spec = HardwareSpec("a100-80g", "llama3-8b", 1, str(vidur_profile))
    assert spec.predictor().source == spec.build().name
    assert fits == [spec.build().name]
    assert "profiled" in fits[0]


def test_the_default_cache_folder_follows_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("SLIDINGPOLICY_CACHE", str(tmp_path))
    assert calibration.cache_dir() == tmp_path / "predictors"
    monkeypatch.delenv("SLIDINGPOLICY_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert calibration.cache_dir() == tmp_path / "xdg" / "slidingpolicy" / "predictors"


def squared_error(predictor: LatencyPredictor, samples: Sequence[Sample]) -> float:
    """Σ (T̂ − y)² over `samples`."""
    return sum(
        (predictor.predict(np.array(s.chunks), np.array(s.contexts)) - s.latency) ** 2
        for s in samples
    )


@pytest.mark.slow
@pytest.mark.parametrize("gpu", sorted(TILINGS))
def test_a_tiled_model_is_calibrated_tile_aware_and_predicts_held_out_batches_better(
    gpu: str, tmp_path: Path
) -> None:
    """On a tile-quantized GPU the predictor fitted on first use counts the tallest tile its
    library picks, and on batches it was not fitted on it errs less than the fit without the
    tile on the same calibration batches."""
    hw = build_hardware(f"{gpu}-quantized", "qwen2.5-7b", 1)
    assert isinstance(hw, QuantizedRooflineModel)
    predictor = calibrated(hw, tmp_path)
    assert predictor.tile == max(t.rows for t in hw.tiling.tiles)
    untiled = fit_predictor(profile(hw, DEFAULT_SAMPLES, DEFAULT_SEED))
    held_out = profile(hw, 1000, DEFAULT_SEED + 1)
    assert squared_error(predictor, held_out) < squared_error(untiled, held_out)


@pytest.mark.slow
def test_a_model_without_tiles_is_calibrated_without_a_tile(tmp_path: Path) -> None:
    assert calibrated(build_hardware("a100-80g-measured", "llama3-8b", 1), tmp_path).tile is None


def test_the_tile_of_the_fit_is_part_of_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """A cached fit without the tile is never reused for a fit with one, and back."""
    hw = build_hardware("rtx3090-quantized", "qwen2.5-7b", 2)
    tiled = fingerprint(hw)
    monkeypatch.setattr(calibration, "calibration_tile", lambda _: None)
    assert fingerprint(hw) != tiled
