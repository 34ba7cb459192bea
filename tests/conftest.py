"""Shared fixtures: a private predictor cache for the whole run (never the user's), and the
reference data folder (tests that need it skip when it is absent)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from slidingpolicy.predictors.calibration import CACHE_ENV


@pytest.fixture(autouse=True, scope="session")
def predictor_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """$SLIDINGPOLICY_CACHE for the session (child processes inherit it)."""
    folder = tmp_path_factory.mktemp("cache")
    before = os.environ.get(CACHE_ENV)
    os.environ[CACHE_ENV] = str(folder)
    yield folder
    if before is None:
        del os.environ[CACHE_ENV]
    else:
        os.environ[CACHE_ENV] = before


def data_dir() -> Path:
    """$SLIDINGPOLICY_DATA, else ../shared/data beside the repository."""
    override = os.environ.get("SLIDINGPOLICY_DATA")
    if override:
        return Path(override)
    return Path(__file__).resolve().parents[1] / ".." / "shared" / "data"


@pytest.fixture
def vidur_profile() -> Path:
    """The Vidur A100 Llama-3-8B profile, or skip."""
    path = data_dir() / "profiles" / "vidur-a100-llama3-8b" / "mlp.csv"
    if not path.is_file():
        pytest.skip(f"reference data absent: {path} (set SLIDINGPOLICY_DATA)")
    return path


@pytest.fixture
def vidur_h100_profile() -> Path:
    """Vidur's H100 Llama-2-7B profile (data/profiling/compute/h100), or skip."""
    path = data_dir() / "profiles" / "vidur-h100-llama2-7b" / "mlp.csv"
    if not path.is_file():
        pytest.skip(f"reference data absent: {path} (set SLIDINGPOLICY_DATA)")
    return path


@pytest.fixture
def traces() -> Path:
    """The reference traces folder, or skip."""
    path = data_dir() / "traces"
    if not path.is_dir():
        pytest.skip(f"reference data absent: {path} (set SLIDINGPOLICY_DATA)")
    return path
