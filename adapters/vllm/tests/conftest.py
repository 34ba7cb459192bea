"""Shared set-up: vLLM offline and in-process, a tiny model folder, and a step driver."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")

from pathlib import Path

import pytest

from slidingpolicy_vllm.testing import tiny_model


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding only the tiny OPT `config.json`."""
    return tiny_model(tmp_path_factory.mktemp("model"))
