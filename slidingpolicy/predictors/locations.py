"""Where the packaged default predictors are: one JSON file per hardware profile."""

from __future__ import annotations

from pathlib import Path

PACKAGED = Path(__file__).resolve().parent / "packaged"
"""The folder of the packaged default predictors."""


def profile_key(gpu: str, model: str, tp: int) -> str:
    """The file stem of a hardware profile's default predictor, e.g. "rtx3090-qwen2.5-7b-tp2"."""
    return f"{gpu}-{model}-tp{tp}"


def packaged_path(gpu: str = "rtx3090", model: str = "qwen2.5-7b", tp: int = 2) -> Path:
    """Where the packaged predictor of a built-in hardware profile is (or would be)."""
    return PACKAGED / f"{profile_key(gpu, model, tp)}.json"
