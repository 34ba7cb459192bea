"""Model shapes to serve with dummy weights: a folder holding only a `config.json`.

A scheduler's behaviour depends on how long a step takes, not on what the model says, so a
real engine can be measured with random weights (vLLM's ``--load-format dummy``, transformers
built from the config alone) and no tokenizer (token-id prompts). The two OPT shapes (head
size 64) are for vLLM's CPU build, the two small Qwen2 shapes for transformers' continuous
batching on a CPU; ``qwen2.5-7b`` is for a GPU:

- ``opt-tiny``: hidden 128, 2 layers, vocab 512; the shape of the adapter's own tests
  (`slidingpolicy_vllm.testing.TINY_OPT`), whose steps take a few milliseconds;
- ``opt-small``: hidden 768, 6 layers, 12 heads, FFN 3072, vocab 50272 (OPT-125m with half
  its layers), whose steps take tens of milliseconds on a CPU core: a prefill chunk of a few
  hundred tokens costs far more than a decode step, as on a GPU serving a 7B model;
- ``qwen2-tiny``: hidden 64, 2 layers, 4 query and 2 KV heads, FFN 128, vocab 512; the shape
  of the transformers adapter's tests (`slidingpolicy_transformers.testing.TINY_QWEN2`);
- ``qwen2-small``: hidden 512, 4 layers, 8 query and 2 KV heads, FFN 1536, vocab 32000, tied
  embeddings: on a CPU core, STEPS;
- ``qwen2.5-7b``: Qwen2.5-7B's own configuration (28 layers, hidden 3584, 28 query and 4 KV
  heads, FFN 18944, vocab 152064, bf16), the paper's model, for a GPU (about 15 GB of
  weights).
"""

from __future__ import annotations

import json
from pathlib import Path
from types import MappingProxyType
from typing import Any

from slidingpolicy._paths import StrPath
from slidingpolicy.errors import EngineError, UnknownNameError

_OPT = {
    "architectures": ["OPTForCausalLM"],
    "model_type": "opt",
    "max_position_embeddings": 4096,
    "do_layer_norm_before": True,
    "torch_dtype": "float32",
}

_QWEN2 = {
    "architectures": ["Qwen2ForCausalLM"],
    "model_type": "qwen2",
    "hidden_act": "silu",
    "rms_norm_eps": 1e-06,
    "tie_word_embeddings": True,
    "use_sliding_window": False,
    "bos_token_id": 1,
    "eos_token_id": 2,
}

SHAPES: MappingProxyType[str, MappingProxyType[str, Any]] = MappingProxyType(
    {
        "opt-tiny": MappingProxyType(
            {
                **_OPT,
                "hidden_size": 128,
                "ffn_dim": 256,
                "num_attention_heads": 2,
                "num_hidden_layers": 2,
                "vocab_size": 512,
                "word_embed_proj_dim": 128,
            }
        ),
        "opt-small": MappingProxyType(
            {
                **_OPT,
                "hidden_size": 768,
                "ffn_dim": 3072,
                "num_attention_heads": 12,
                "num_hidden_layers": 6,
                "vocab_size": 50272,
                "word_embed_proj_dim": 768,
            }
        ),
        "qwen2-tiny": MappingProxyType(
            {
                **_QWEN2,
                "hidden_size": 64,
                "intermediate_size": 128,
                "num_hidden_layers": 2,
                "num_attention_heads": 4,
                "num_key_value_heads": 2,
                "vocab_size": 512,
                "max_position_embeddings": 4096,
                "rope_theta": 10000.0,
            }
        ),
        "qwen2-small": MappingProxyType(
            {
                **_QWEN2,
                "hidden_size": 512,
                "intermediate_size": 1536,
                "num_hidden_layers": 4,
                "num_attention_heads": 8,
                "num_key_value_heads": 2,
                "vocab_size": 32000,
                "max_position_embeddings": 8192,
                "rope_theta": 1000000.0,
                "torch_dtype": "float32",
            }
        ),
        "qwen2.5-7b": MappingProxyType(
            {
                "architectures": ["Qwen2ForCausalLM"],
                "model_type": "qwen2",
                "hidden_size": 3584,
                "intermediate_size": 18944,
                "num_hidden_layers": 28,
                "num_attention_heads": 28,
                "num_key_value_heads": 4,
                "vocab_size": 152064,
                "max_position_embeddings": 32768,
                "max_window_layers": 28,
                "hidden_act": "silu",
                "rms_norm_eps": 1e-06,
                "rope_theta": 1000000.0,
                "sliding_window": 131072,
                "use_sliding_window": False,
                "tie_word_embeddings": False,
                "bos_token_id": 151643,
                "eos_token_id": 151643,
                "torch_dtype": "bfloat16",
            }
        ),
    }
)


def shape_names() -> tuple[str, ...]:
    """The packaged shapes."""
    return tuple(SHAPES)


def write_shape(name: str, folder: StrPath) -> Path:
    """A model folder at `folder` holding only the shape's `config.json`."""
    folder = Path(folder)
    if name not in SHAPES:
        raise UnknownNameError("model shape", name, shape_names())
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(dict(SHAPES[name]), indent=2) + "\n")
    return folder


def vocab_size(folder: StrPath) -> int:
    """The `vocab_size` of the model folder's `config.json`."""
    folder = Path(folder)
    path = folder / "config.json"
    try:
        config = json.loads(path.read_text())
        size = config["vocab_size"]
    except (OSError, ValueError, KeyError, TypeError):
        raise EngineError(
            f"model {folder}: needs a config.json with a vocab_size (a Hugging Face model "
            "folder; a config alone is enough with dummy weights)"
        ) from None
    if isinstance(size, bool) or not isinstance(size, int) or size < 2:
        raise EngineError(f"model {path}: vocab_size={size!r} must be an int >= 2")
    return size
