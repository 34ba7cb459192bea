"""The transformers arms: its own schedulers by `--arm` name, each policy by its label with
its predictor and trace; every arm's step size and KV cache written out, the user's extra
arguments last; offline. The two small Qwen2 shapes."""

from __future__ import annotations

import json
from pathlib import Path

from slidingpolicy.replay.engines import Arm, parse_arms
from slidingpolicy.replay.shapes import SHAPES
from slidingpolicy.replay.transformers_server import (
    NATIVE_BATCH_TOKENS,
    NUM_BLOCKS,
    TRANSFORMERS,
    batch_tokens,
    serve_command,
    serve_env,
)

PYTHON, MODEL = Path("/venv/bin/python"), Path("/m")


def value(command: list[str], flag: str) -> str:
    """The word after `flag`, which must appear once."""
    assert command.count(flag) == 1, command
    return command[command.index(flag) + 1]


def test_every_arm_is_served_by_the_adapter_with_its_arm_named() -> None:
    for arm in parse_arms(
        "native,prefill_first,sarathi-edf[token_budget=256]", TRANSFORMERS.natives
    ):
        command = serve_command(PYTHON, MODEL, "m", 8001, arm)
        assert command[:5] == [str(PYTHON), "-m", "slidingpolicy_transformers", "serve", "/m"]
        assert value(command, "--arm") == arm.label
        assert value(command, "--host") == "127.0.0.1"
        assert value(command, "--port") == "8001"
        assert value(command, "--served-model-name") == "m"
        assert value(command, "--num-blocks") == str(NUM_BLOCKS)


def test_each_arms_step_size_is_written_out() -> None:
    assert batch_tokens(Arm()) == batch_tokens(Arm(native="prefill_first")) == NATIVE_BATCH_TOKENS
    assert batch_tokens(Arm("sarathi-edf", (("token_budget", 256),))) == 256
    assert batch_tokens(Arm("slidingserve+")) == 2048
    command = serve_command(PYTHON, MODEL, "m", 1, Arm("sarathi-edf", (("token_budget", 384),)))
    assert value(command, "--max-batch-tokens") == "384"


def test_only_policy_arms_get_the_predictor_and_trace() -> None:
    given = (Path("/p.json"), Path("/t.jsonl"))
    policy = serve_command(PYTHON, MODEL, "m", 1, Arm("slidingserve+"), *given)
    assert json.loads(value(policy, "--adapter-config")) == {
        "predictor": "/p.json",
        "trace": "/t.jsonl",
    }
    assert "--adapter-config" not in serve_command(PYTHON, MODEL, "m", 1, Arm(), *given)
    assert "--adapter-config" not in serve_command(PYTHON, MODEL, "m", 1, Arm("sarathi-edf"))


def test_extra_arguments_come_last_so_that_they_override() -> None:
    command = serve_command(PYTHON, MODEL, "m", 1, Arm(), extra=["--num-blocks=4096"])
    assert command[-1] == "--num-blocks=4096"


def test_the_server_runs_offline_on_one_thread_unless_told() -> None:
    assert serve_env({"HF_HUB_OFFLINE": "0", "PATH": "/bin"}) == {
        "HF_HUB_OFFLINE": "1",
        "OMP_NUM_THREADS": "1",
        "PATH": "/bin",
    }
    assert serve_env({"OMP_NUM_THREADS": "2"})["OMP_NUM_THREADS"] == "2"


def test_transformers_serves_qwen2_small_unless_told() -> None:
    assert TRANSFORMERS.shape == "qwen2-small"
    assert TRANSFORMERS.natives == ("native", "prefill_first")
    assert (TRANSFORMERS.python_option, TRANSFORMERS.python_variable) == (
        "--transformers-python",
        "SLIDINGPOLICY_TRANSFORMERS_PYTHON",
    )


def test_the_qwen2_cpu_shapes() -> None:
    small, tiny = SHAPES["qwen2-small"], SHAPES["qwen2-tiny"]
    for shape in (small, tiny):
        assert shape["architectures"] == ["Qwen2ForCausalLM"]
        assert shape["use_sliding_window"] is False
        assert shape["tie_word_embeddings"] is True
    assert (small["hidden_size"], small["num_hidden_layers"], small["intermediate_size"]) == (
        512,
        4,
        1536,
    )
    assert (small["num_attention_heads"], small["num_key_value_heads"]) == (8, 2)
    assert (small["vocab_size"], small["torch_dtype"]) == (32000, "float32")
    assert (tiny["hidden_size"], tiny["num_hidden_layers"], tiny["intermediate_size"]) == (
        64,
        2,
        128,
    )
    assert (tiny["num_attention_heads"], tiny["num_key_value_heads"], tiny["vocab_size"]) == (
        4,
        2,
        512,
    )


def test_a_policy_arm_passes_its_plugins_to_the_adapter_and_the_native_arm_none() -> None:
    arm = Arm("sarathi-edf", plugins=("/abs/my_policy.py",))
    command = serve_command(PYTHON, MODEL, "m", 1, arm)
    config = json.loads(command[command.index("--adapter-config") + 1])
    assert config == {"plugins": ["/abs/my_policy.py"]}
    native = serve_command(PYTHON, MODEL, "m", 1, Arm(plugins=("/abs/my_policy.py",)))
    assert "--adapter-config" not in native
