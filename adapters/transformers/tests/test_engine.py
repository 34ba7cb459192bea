"""The engine's model: built where it will run, in the dtype asked."""

from __future__ import annotations

from pathlib import Path

import torch

from slidingpolicy_transformers.engine import EngineSettings, build_model


def test_the_model_is_created_on_its_device(model_dir: Path) -> None:
    # the meta device holds no data: a model created elsewhere and moved would not be there
    model = build_model(EngineSettings(model_dir, device="meta", dtype="bfloat16"))
    parameters = list(model.parameters())
    assert parameters
    assert {p.device.type for p in parameters} == {"meta"}
    assert {p.dtype for p in parameters} == {torch.bfloat16}
