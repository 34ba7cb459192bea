"""Drive vLLM's real scheduler without a model: a tiny model config, a small KV cache of
blocks, requests of given lengths and hand-built model outputs (one token per finished
prefill or decode). The adapter's tests and `bench/vllm_adapter.py` use it; so can anyone
checking a policy inside vLLM on a machine without a GPU.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from vllm.config import CacheConfig, ModelConfig, SchedulerConfig, VllmConfig
from vllm.sampling_params import SamplingParams
from vllm.v1.core.sched.output import SchedulerOutput
from vllm.v1.core.sched.scheduler import Scheduler
from vllm.v1.kv_cache_interface import FullAttentionSpec, KVCacheConfig, KVCacheGroupSpec
from vllm.v1.outputs import ModelRunnerOutput
from vllm.v1.request import Request
from vllm.v1.structured_output import StructuredOutputManager

from slidingpolicy_vllm.door import DOOR

TINY_OPT = {
    "architectures": ["OPTForCausalLM"],
    "model_type": "opt",
    "hidden_size": 128,
    "ffn_dim": 256,
    "num_attention_heads": 2,
    "num_hidden_layers": 2,
    "vocab_size": 512,
    "max_position_embeddings": 4096,
    "word_embed_proj_dim": 128,
    "do_layer_norm_before": True,
    "torch_dtype": "float32",
}
"""An OPT shape with head size 64: small enough to run with dummy weights on a CPU."""

TOKEN = 7
"""The token every hand-built output samples."""


def tiny_model(folder: Path) -> Path:
    """A model folder holding only `config.json` (load with `HF_HUB_OFFLINE=1`)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(TINY_OPT))
    return folder


def make_scheduler(
    cls: type[Scheduler],
    model: Path,
    *,
    num_blocks: int,
    block_size: int = 16,
    max_num_batched_tokens: int = 2048,
    max_num_seqs: int = 128,
    max_model_len: int = 4096,
    additional_config: dict[str, Any] | None = None,
    logits_processors: Sequence[str] = (DOOR,),
) -> Scheduler:
    """A scheduler of class `cls` over a KV cache of `num_blocks` blocks (+1, vLLM's null),
    with the adapter's door among the logits processors, as `serve` gives it."""
    model_config = ModelConfig(
        model=str(model),
        skip_tokenizer_init=True,
        max_model_len=max_model_len,
        seed=0,
        logits_processors=list(logits_processors),
    )
    cache_config = CacheConfig(block_size=block_size, enable_prefix_caching=False)
    cache_config.num_gpu_blocks = num_blocks + 1
    scheduler_config = SchedulerConfig(
        max_num_seqs=max_num_seqs,
        max_num_batched_tokens=max_num_batched_tokens,
        max_model_len=max_model_len,
        enable_chunked_prefill=True,
        is_encoder_decoder=False,
    )
    vllm_config = VllmConfig(
        model_config=model_config,
        cache_config=cache_config,
        scheduler_config=scheduler_config,
        additional_config=additional_config or {},
    )
    kv_cache_config = KVCacheConfig(
        num_blocks=num_blocks + 1,
        kv_cache_tensors=[],
        kv_cache_groups=[
            KVCacheGroupSpec(
                ["layer"],
                FullAttentionSpec(
                    block_size=block_size, num_kv_heads=1, head_size=64, dtype=torch.float32
                ),
            )
        ],
    )
    return cls(
        vllm_config=vllm_config,
        kv_cache_config=kv_cache_config,
        structured_output_manager=StructuredOutputManager(vllm_config),
        block_size=block_size,
    )


def make_request(
    request_id: str,
    prompt_tokens: int,
    max_tokens: int,
    arrival_time: float,
    extra_args: dict[str, Any] | None = None,
) -> Request:
    """A text request of `prompt_tokens` tokens that stops after `max_tokens` outputs."""
    params = SamplingParams(max_tokens=max_tokens, ignore_eos=True, extra_args=extra_args)
    return Request(request_id, [TOKEN] * prompt_tokens, params, None, arrival_time=arrival_time)


def model_output(scheduler: Scheduler, output: SchedulerOutput) -> ModelRunnerOutput:
    """What a model returns for `output`, built right after `schedule()`: one sampled token
    for each request whose scheduled tokens reach the end of what it holds, none for a
    prefill chunk that stops short."""
    ids = list(output.num_scheduled_tokens)
    sampled = [[] if scheduler.requests[i].is_prefill_chunk else [TOKEN] for i in ids]
    return ModelRunnerOutput(
        req_ids=ids, req_id_to_index={i: k for k, i in enumerate(ids)}, sampled_token_ids=sampled
    )
