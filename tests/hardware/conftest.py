"""Shared fixtures: the reference data folder (tests that need it skip when it is absent)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def data_dir() -> Path:
    """$SLIDINGPOLICY_DATA, else ../shared/data beside the repository."""
    override = os.environ.get("SLIDINGPOLICY_DATA")
    if override:
        return Path(override)
    return Path(__file__).resolve().parents[2] / ".." / "shared" / "data"


@pytest.fixture
def vidur_profile() -> Path:
    """The Vidur A100 Llama-3-8B profile, or skip."""
    path = data_dir() / "profiles" / "vidur-a100-llama3-8b" / "mlp.csv"
    if not path.is_file():
        pytest.skip(f"reference data absent: {path} (set SLIDINGPOLICY_DATA)")
    return path
