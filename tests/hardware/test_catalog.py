"""The built-in GPUs and model shapes, and lookup by name."""

from __future__ import annotations

import pytest

from slidingpolicy.errors import InvalidRecordError, UnknownNameError
from slidingpolicy.hardware import MODELS, ModelShape, gpu, model


def test_qwen_shape_matches_its_published_parameter_count() -> None:
    qwen = model("qwen2.5-7b")
    assert qwen.head_dim == 128
    assert 7.5e9 < qwen.params < 7.7e9  # "7.61B" on the model card


def test_llama3_shape_matches_its_published_parameter_count() -> None:
    llama = model("llama3-8b")
    assert 7.9e9 < llama.params < 8.1e9  # "8.03B" on the model card


@pytest.mark.parametrize("name", sorted(MODELS))
def test_kv_bytes_per_token_is_two_layers_kv_heads_head_dim_dtype(name: str) -> None:
    m = MODELS[name]
    assert m.kv_bytes_per_token == 2 * m.layers * m.kv_heads * m.head_dim * m.dtype_bytes


def test_kv_bytes_per_token_of_the_built_ins() -> None:
    assert model("qwen2.5-7b").kv_bytes_per_token == 56 * 1024
    assert model("llama3-8b").kv_bytes_per_token == 128 * 1024


def test_streamed_weights_leave_out_only_the_embedding_table() -> None:
    m = model("qwen2.5-7b")
    assert m.weight_bytes - m.streamed_weight_bytes == m.vocab * m.hidden * m.dtype_bytes


def test_spec_figures_of_the_gpus() -> None:
    assert gpu("rtx3090").peak_flops == 71e12
    assert gpu("rtx3090").memory_bandwidth == 936e9
    assert gpu("a100-80g").peak_flops == 312e12
    assert gpu("h100").peak_flops == 989e12
    assert gpu("h100").memory_bandwidth == 3.35e12


def test_unknown_gpu_lists_the_known_ones() -> None:
    with pytest.raises(UnknownNameError, match="a100-80g, h100, rtx3090"):
        gpu("v100")


def test_unknown_model_lists_the_known_ones() -> None:
    with pytest.raises(UnknownNameError, match=r"llama3-8b, qwen2\.5-7b"):
        model("gpt2")


@pytest.mark.parametrize(
    ("field", "kwargs"),
    [
        ("layers", {"layers": 0}),
        ("heads", {"heads": 5}),
        ("kv_heads", {"kv_heads": 3}),
        ("dtype_bytes", {"dtype_bytes": 3}),
    ],
)
def test_model_shape_rejects_bad_fields(field: str, kwargs: dict[str, int]) -> None:
    fields = {"layers": 2, "hidden": 64, "heads": 4, "kv_heads": 2, "intermediate": 128}
    fields.update(kwargs)
    with pytest.raises(InvalidRecordError, match=field):
        ModelShape("tiny", vocab=100, **fields)
