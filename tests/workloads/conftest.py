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
def traces() -> Path:
    """The reference traces folder, or skip."""
    path = data_dir() / "traces"
    if not path.is_dir():
        pytest.skip(f"reference data absent: {path} (set SLIDINGPOLICY_DATA)")
    return path
