"""The vLLM arms: vLLM's own scheduler without the adapter, each policy through it with its
options, predictor and trace; the same other arguments for every arm. The model shapes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from slidingpolicy.errors import EngineError
from slidingpolicy.replay.engines import Arm
from slidingpolicy.replay.shapes import SHAPES, shape_names, vocab_size, write_shape
from slidingpolicy.replay.vllm_server import VLLM, serve_command, serve_env


def test_only_policy_arms_get_the_adapter_and_all_share_the_rest() -> None:
    python, model = Path("/venv/bin/python"), Path("/m")
    native = serve_command(python, model, "m", 8001, Arm(), extra=["--max-num-seqs", "8"])
    arm = Arm("sarathi-edf", (("token_budget", 256),))
    policy = serve_command(
        python, model, "m", 8001, arm, Path("/p.json"), Path("/t.jsonl"), ["--max-num-seqs", "8"]
    )
    assert native[:4] == [str(python), "-m", "slidingpolicy_vllm", "serve"]
    assert "--scheduler-cls" not in native
    at = policy.index("--additional-config")
    assert json.loads(policy[at + 1]) == {
        "slidingpolicy": {
            "policy": "sarathi-edf",
            "options": {"token_budget": 256},
            "predictor": "/p.json",
            "trace": "/t.jsonl",
        }
    }
    shared = [a for i, a in enumerate(policy) if i not in (at, at + 1) and a != "--scheduler-cls"]
    shared.remove("slidingpolicy_vllm.SlidingScheduler")
    assert shared == native
    assert native[native.index("--host") + 1] == "127.0.0.1"


def test_the_server_runs_offline_with_a_small_kv_cache_unless_one_is_set() -> None:
    assert serve_env({})["VLLM_CPU_KVCACHE_SPACE"] == "1"
    assert serve_env({"VLLM_CPU_KVCACHE_SPACE": "4"})["VLLM_CPU_KVCACHE_SPACE"] == "4"
    assert serve_env({})["HF_HUB_OFFLINE"] == "1"


@pytest.mark.parametrize("name", shape_names())
def test_each_shape_is_a_folder_with_only_its_config(tmp_path: Path, name: str) -> None:
    folder = write_shape(name, tmp_path / name)
    assert [p.name for p in folder.iterdir()] == ["config.json"]
    assert json.loads((folder / "config.json").read_text()) == dict(SHAPES[name])
    assert vocab_size(folder) == SHAPES[name]["vocab_size"]


@pytest.mark.parametrize("name", ["opt-tiny", "opt-small"])
def test_the_cpu_shapes_have_the_head_size_vllms_cpu_build_serves(name: str) -> None:
    assert SHAPES[name]["hidden_size"] // SHAPES[name]["num_attention_heads"] == 64


def test_the_gpu_shape_is_qwen2_5_7bs_own_configuration() -> None:
    shape = SHAPES["qwen2.5-7b"]
    assert shape["architectures"] == ["Qwen2ForCausalLM"]
    assert (shape["num_hidden_layers"], shape["hidden_size"], shape["intermediate_size"]) == (
        28,
        3584,
        18944,
    )
    assert (shape["num_attention_heads"], shape["num_key_value_heads"]) == (28, 4)
    assert shape["vocab_size"] == 152064


def test_vllm_serves_opt_small_unless_told_and_has_one_native_arm() -> None:
    assert (VLLM.shape, VLLM.natives, VLLM.package) == (
        "opt-small",
        ("native",),
        "slidingpolicy_vllm",
    )
    assert (VLLM.python_option, VLLM.python_variable) == (
        "--vllm-python",
        "SLIDINGPOLICY_VLLM_PYTHON",
    )


def test_a_model_folder_without_a_config_is_named(tmp_path: Path) -> None:
    with pytest.raises(EngineError, match=r"config\.json"):
        vocab_size(tmp_path)


def test_a_policy_arm_names_the_plugins_that_register_it_for_the_adapter() -> None:
    arm = Arm("shortest-first", (), plugins=("/abs/my_policy.py", "my_package.policies"))
    command = serve_command(Path("/venv/bin/python"), Path("/m"), "m", 8001, arm)
    config = json.loads(command[command.index("--additional-config") + 1])["slidingpolicy"]
    assert config["plugins"] == ["/abs/my_policy.py", "my_package.policies"]
    plain = serve_command(Path("/venv/bin/python"), Path("/m"), "m", 8001, Arm("vllm"))
    assert (
        "plugins" not in json.loads(plain[plain.index("--additional-config") + 1])["slidingpolicy"]
    )
