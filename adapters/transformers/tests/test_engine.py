"""The engine's model: built where it will run, in the dtype asked; its command line's
`--adapter-config` read as a JSON object or refused naming the option."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from slidingpolicy_transformers.engine import EngineSettings, adapter_options, build_model


def test_the_model_is_created_on_its_device(model_dir: Path) -> None:
    # the meta device holds no data: a model created elsewhere and moved would not be there
    model = build_model(EngineSettings(model_dir, device="meta", dtype="bfloat16"))
    parameters = list(model.parameters())
    assert parameters
    assert {p.device.type for p in parameters} == {"meta"}
    assert {p.dtype for p in parameters} == {torch.bfloat16}


def test_the_adapter_config_option_is_a_json_object_or_refused_by_name() -> None:
    assert adapter_options('{"check_plans": false}') == {"check_plans": False}
    for text, why in (("{oops", "Expecting property name"), ("[1]", "must be a JSON object")):
        with pytest.raises(SystemExit, match=f"--adapter-config: {why}"):
            adapter_options(text)
