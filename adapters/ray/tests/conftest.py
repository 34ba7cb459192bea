"""Shared set-up: offline, and a tiny model folder."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from pathlib import Path

import pytest
from slidingpolicy_transformers.testing import tiny_model


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding only the tiny Qwen2 `config.json`."""
    return tiny_model(tmp_path_factory.mktemp("model"))
