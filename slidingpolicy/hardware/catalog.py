"""Built-in GPUs and model shapes, with the source of every constant.

GPUs (dense bf16 tensor FLOP/s with fp32 accumulate, as PyTorch/vLLM run them; memory in GiB as
the driver reports it; link bandwidth per direction between two GPUs):

- ``rtx3090``: 71 TFLOP/s bf16 dense, 936 GB/s GDDR6X, 24 GiB (NVIDIA Ampere GA102 GPU
  Architecture whitepaper, v2.0, Table 9). No P2P between GeForce cards, so tensor parallelism
  goes over PCIe 4.0 x16: 32 GB/s per direction (PCI-SIG PCIe 4.0 base specification);
  20 µs per collective step is the order NCCL's all-reduce reports for small messages on PCIe.
- ``a100-80g``: 312 TFLOP/s bf16 dense, 2.039 TB/s HBM2e, 80 GiB (NVIDIA A100 Tensor Core GPU
  datasheet, SXM4 80GB); NVLink 3: 600 GB/s total, 300 GB/s per direction; 8 µs per step.
- ``h100``: 989 TFLOP/s bf16 dense, 3.35 TB/s HBM3, 80 GiB (NVIDIA H100 Tensor Core GPU
  datasheet, SXM5); NVLink 4: 900 GB/s total, 450 GB/s per direction; 6 µs per step.

Models (the ``config.json`` of each checkpoint on the Hugging Face Hub; untied embeddings):

- ``qwen2.5-7b``: Qwen/Qwen2.5-7B-Instruct: 28 layers, hidden 3584, 28 heads, 4 KV heads,
  intermediate 18944, vocab 152064 (7.6 B parameters).
- ``llama3-8b``: meta-llama/Meta-Llama-3-8B: 32 layers, hidden 4096, 32 heads, 8 KV heads,
  intermediate 14336, vocab 128256 (8.0 B parameters).
"""

from __future__ import annotations

import math

import attrs

from slidingpolicy.errors import InvalidRecordError, UnknownNameError

GiB = 1 << 30


def _positive(record: str, field: str, value: float) -> None:
    if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
        raise InvalidRecordError(record, field, f"={value!r} must be a finite number > 0")


@attrs.frozen(slots=True)
class GPU:
    """One accelerator: dense bf16 FLOP/s, memory bytes/s, memory bytes, GPU-to-GPU link."""

    name: str
    peak_flops: float
    memory_bandwidth: float
    memory_bytes: int
    link_bandwidth: float
    link_latency: float

    def __attrs_post_init__(self) -> None:
        record = f"gpu {self.name!r}"
        for field in ("peak_flops", "memory_bandwidth", "memory_bytes", "link_bandwidth"):
            _positive(record, field, getattr(self, field))
        if not (math.isfinite(self.link_latency) and self.link_latency >= 0):
            raise InvalidRecordError(record, "link_latency", f"={self.link_latency} must be >= 0")


@attrs.frozen(slots=True)
class ModelShape:
    """A dense decoder-only transformer with grouped-query attention and a gated MLP."""

    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    intermediate: int
    vocab: int
    dtype_bytes: int = 2

    def __attrs_post_init__(self) -> None:
        record = f"model {self.name!r}"
        for field in ("layers", "hidden", "heads", "kv_heads", "intermediate", "vocab"):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidRecordError(record, field, f"={value!r} must be an int >= 1")
        if self.dtype_bytes not in (1, 2, 4):
            raise InvalidRecordError(record, "dtype_bytes", f"={self.dtype_bytes} not in 1, 2, 4")
        if self.hidden % self.heads:
            raise InvalidRecordError(record, "heads", f"={self.heads} does not divide hidden")
        if self.heads % self.kv_heads:
            raise InvalidRecordError(record, "kv_heads", f"={self.kv_heads} does not divide heads")

    @property
    def head_dim(self) -> int:
        """Width of one attention head."""
        return self.hidden // self.heads

    @property
    def kv_dim(self) -> int:
        """Width of the K (or V) projection: kv_heads · head_dim."""
        return self.kv_heads * self.head_dim

    @property
    def layer_params(self) -> int:
        """Linear weights of one layer: Q, K, V, O projections and the gated MLP."""
        attention = self.hidden * (self.hidden + 2 * self.kv_dim) + self.hidden * self.hidden
        return attention + 3 * self.hidden * self.intermediate

    @property
    def embedding_params(self) -> int:
        """The input embedding table (gathered, never streamed whole)."""
        return self.vocab * self.hidden

    @property
    def lm_head_params(self) -> int:
        """The output projection to the vocabulary."""
        return self.vocab * self.hidden

    @property
    def params(self) -> int:
        """All weights: layers, embedding and LM head (norm weights are negligible)."""
        return self.layers * self.layer_params + self.embedding_params + self.lm_head_params

    @property
    def weight_bytes(self) -> int:
        """Bytes of all weights."""
        return self.params * self.dtype_bytes

    @property
    def streamed_weight_bytes(self) -> int:
        """Bytes of the weights every iteration reads in full: every layer and the LM head."""
        return (self.layers * self.layer_params + self.lm_head_params) * self.dtype_bytes

    @property
    def kv_bytes_per_token(self) -> int:
        """KV cache bytes per token over all GPUs: 2 · layers · kv_heads · head_dim · dtype."""
        return 2 * self.layers * self.kv_dim * self.dtype_bytes

    def kv_heads_per_gpu(self, tp: int) -> int:
        """KV heads each of `tp` GPUs holds; vLLM replicates them when tp exceeds kv_heads."""
        return max(1, self.kv_heads // tp)


GPUS: dict[str, GPU] = {
    gpu.name: gpu
    for gpu in (
        GPU("rtx3090", 71e12, 936e9, 24 * GiB, 32e9, 20e-6),
        GPU("a100-80g", 312e12, 2.039e12, 80 * GiB, 300e9, 8e-6),
        GPU("h100", 989e12, 3.35e12, 80 * GiB, 450e9, 6e-6),
    )
}

MODELS: dict[str, ModelShape] = {
    model.name: model
    for model in (
        ModelShape("qwen2.5-7b", 28, 3584, 28, 4, 18944, 152064),
        ModelShape("llama3-8b", 32, 4096, 32, 8, 14336, 128256),
    )
}


def gpu(name: str) -> GPU:
    """The built-in GPU of that name."""
    try:
        return GPUS[name]
    except KeyError:
        raise UnknownNameError("gpu", name, tuple(GPUS)) from None


def model(name: str) -> ModelShape:
    """The built-in model shape of that name."""
    try:
        return MODELS[name]
    except KeyError:
        raise UnknownNameError("model", name, tuple(MODELS)) from None
