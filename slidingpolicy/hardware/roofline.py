"""The roofline latency model: ground truth for the offline engine, independent of the predictor.

One iteration runs a batch where request i has ``chunks[i]`` new tokens and ``contexts[i]``
tokens already cached. Per GPU (weights and heads sharded by tensor parallelism ``tp``):

- every linear op (QKV, O, gate-up, down projections; the LM head on one token per request)
  takes max(FLOPs / (peak · gemm_eff), bytes / (bandwidth · memory_eff)), bytes counting the
  weights and the activations in and out;
- element-wise ops (two RMSNorms, two residual adds, RoPE, SiLU·mul) and the embedding gather
  are memory-bound;
- attention of request i with c new tokens over u cached ones: FLOPs 4 · heads · head_dim ·
  c · (u + c/2), bytes (u + 2c) · KV bytes per token (read the cache, write the new tokens)
  plus the queries and outputs. A prefill (c > 1) runs as its own roofline; the decodes
  (c = 1) run as one kernel whose time is the roofline of their summed FLOPs and bytes, so it
  depends on their count and total context alone;
- with tp > 1, two ring all-reduces of the activations per layer, each 2(tp − 1) steps of
  link latency plus bytes / (link bandwidth · link_eff), and an all-gather of the logits;
- a fixed per-iteration overhead (scheduling, input preparation, sampling).

Default efficiencies: gemm 0.7 (the Vidur A100 profile of Llama-3-8B in the reference data,
profiles/vidur-a100-llama3-8b, measures its projections at 70 % of peak at 2k tokens); attention
0.5 (FlashAttention-2, Dao 2023, reports 50-73 % of peak in the forward pass); memory 0.75 and
link 0.7 (what GEMV kernels and NCCL bus bandwidth typically reach of the nominal figures);
overhead 3 ms (vLLM's CPU time per step with CUDA graphs is a few ms). Memory: vLLM's
``gpu_memory_utilization`` 0.9 and a 1 GiB activation reserve per GPU.

`latency` is noise-free; `sample` multiplies it by exp(sigma · z), z standard normal, drawn from
the caller's generator (median factor 1; sigma 0 returns `latency` exactly).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import attrs
import numpy as np

from slidingpolicy.errors import InvalidRecordError
from slidingpolicy.hardware.batch_summary import (
    BatchSummary,
    DenseTimes,
    FloatArray,
    IntArray,
    check_batch,
    check_decode_run,
    count_batch,
    decode_run,
)
from slidingpolicy.hardware.catalog import GPU, GiB, ModelShape
from slidingpolicy.hardware.scalar_roofline import (
    ScalarTerms,
    scalar_decode_pricer,
    scalar_latency,
    scalar_latency_of,
)

KV_BLOCK_SIZE = 16


def _fraction(record: str, field: str, value: float) -> None:
    if not (math.isfinite(value) and 0.0 < value <= 1.0):
        raise InvalidRecordError(record, field, f"={value} must be in (0, 1]")


@attrs.frozen(slots=True)
class RooflineModel:
    """Iteration latency of `model` on `tp` × `gpu` from first principles (module docstring)."""

    gpu: GPU
    model: ModelShape
    tp: int = 1
    gemm_efficiency: float = 0.7
    attention_efficiency: float = 0.5
    memory_efficiency: float = 0.75
    link_efficiency: float = 0.7
    overhead: float = 3e-3
    memory_utilization: float = 0.9
    activation_reserve_bytes: int = GiB
    noise_sigma: float = 0.02
    kv_block_size: int = attrs.field(default=KV_BLOCK_SIZE, init=False)
    terms: ScalarTerms = attrs.field(init=False, eq=False, repr=False)
    """Constants of the scalar path, set from the fields above."""

    def __attrs_post_init__(self) -> None:
        record = f"hardware {self.name!r}"
        if isinstance(self.tp, bool) or not isinstance(self.tp, int) or self.tp < 1:
            raise InvalidRecordError(record, "tp", f"={self.tp!r} must be an int >= 1")
        m = self.model
        if m.heads % self.tp or (m.kv_heads % self.tp and self.tp % m.kv_heads):
            raise InvalidRecordError(
                record,
                "tp",
                f"={self.tp} must divide heads={m.heads} and divide or be a "
                f"multiple of kv_heads={m.kv_heads}",
            )
        for field in (
            "gemm_efficiency",
            "attention_efficiency",
            "memory_efficiency",
            "link_efficiency",
            "memory_utilization",
        ):
            _fraction(record, field, getattr(self, field))
        if not (math.isfinite(self.overhead) and self.overhead >= 0):
            raise InvalidRecordError(record, "overhead", f"={self.overhead} must be >= 0")
        if not (math.isfinite(self.noise_sigma) and self.noise_sigma >= 0):
            raise InvalidRecordError(record, "noise_sigma", f"={self.noise_sigma} must be >= 0")
        if self.activation_reserve_bytes < 0:
            raise InvalidRecordError(record, "activation_reserve_bytes", "must be >= 0")
        if self.kv_capacity_tokens < self.kv_block_size:
            raise InvalidRecordError(
                record, "memory", "leaves no room for one KV block after the weights"
            )
        object.__setattr__(self, "terms", self._scalar_terms())

    def _scalar_terms(self) -> ScalarTerms:
        m, tp = self.model, self.tp
        h, dt = m.hidden, m.dtype_bytes
        q_out = m.hidden // tp
        kv_out = m.kv_heads_per_gpu(tp) * m.head_dim
        inter = m.intermediate // tp
        flops_token, kv_token, qo_token = self._attention_coefficients
        return ScalarTerms(
            layers=m.layers,
            flops_token=flops_token,
            kv_token=kv_token,
            qo_token=qo_token,
            attention_flops=self.gpu.peak_flops * self.attention_efficiency,
            gemm_flops=self._flops,
            bandwidth=self._bandwidth,
            gemms=((h, q_out + 2 * kv_out), (q_out, h), (h, 2 * inter), (inter, h)),
            dtype_bytes=dt,
            elementwise=dt * (10 * h + 2 * (q_out + kv_out) + 3 * inter),
            embedding=2 * h * dt,
            lm_k=m.hidden,
            lm_n=m.vocab // tp,
        )

    @property
    def name(self) -> str:
        """E.g. "qwen2.5-7b on 2× rtx3090 (TP2)"."""
        return f"{self.model.name} on {self.tp}× {self.gpu.name} (TP{self.tp})"

    @property
    def kv_bytes_per_token_per_gpu(self) -> int:
        """KV cache bytes one token takes on each GPU (its shard of the KV heads)."""
        m = self.model
        return 2 * m.layers * self.model.kv_heads_per_gpu(self.tp) * m.head_dim * m.dtype_bytes

    @property
    def kv_capacity_tokens(self) -> int:
        """KV slots: usable memory per GPU less weights and reserve, in whole blocks."""
        usable = int(self.gpu.memory_bytes * self.memory_utilization)
        free = usable - -(-self.model.weight_bytes // self.tp) - self.activation_reserve_bytes
        tokens = max(0, free) // self.kv_bytes_per_token_per_gpu
        return tokens // self.kv_block_size * self.kv_block_size

    def latency(self, chunks: IntArray, contexts: IntArray) -> float:
        """Noise-free seconds of one iteration; an empty batch takes 0.0.

        On Python floats (`scalar_latency`): bit for bit `latency_arrays`, faster on the small
        batches an engine runs."""
        return scalar_latency(self, chunks, contexts, self._dense_time)

    def latency_arrays(self, chunks: IntArray, contexts: IntArray) -> float:
        """`latency` on numpy arrays: the reference the scalar path is tested against."""
        check_batch(chunks, contexts)
        if chunks.size == 0:
            return 0.0
        return float(self.iteration_times(self._dense_times, self.summarize(chunks, contexts))[0])

    def latency_of(self, chunks: list[int], contexts: list[int]) -> float:
        """`latency` of a batch given as lists of ints (what an engine holds)."""
        return scalar_latency_of(self, chunks, contexts, self._dense_time)

    def sample(self, chunks: IntArray, contexts: IntArray, rng: np.random.Generator) -> float:
        """`latency` times exp(noise_sigma · z), one standard normal z drawn from `rng`."""
        return noisy(self.latency(chunks, contexts), self.noise_sigma, rng)

    def with_noise(self, latency: float, z: float) -> float:
        """`latency` times exp(noise_sigma · z), for the standard normal z."""
        return lognormal(latency, self.noise_sigma, z)

    def decode_latencies(self, num_decodes: int, total_context: IntArray) -> FloatArray:
        """Noise-free latency of each decode-only iteration, given its total cached context."""
        check_decode_run(num_decodes, total_context)
        if num_decodes == 0:
            return np.zeros(total_context.size)
        return self.iteration_times(self._dense_times, decode_run(num_decodes, total_context))

    def decode_pricer(self, num_decodes: int) -> Callable[[int], float]:
        """`decode_latencies` of one iteration of `num_decodes` (>= 1) decodes, as a function of
        its total context, on Python floats: bit for bit the array's entry (tested)."""
        return scalar_decode_pricer(self, num_decodes, self._dense_time)

    def count_seconds(self, tokens: FloatArray, entries: FloatArray) -> FloatArray:
        """Iteration time of batches with these token and entry (request) counts and no
        attention: the part of `latency` that depends on the counts alone (dense ops, LM head,
        all-reduces, overhead). `latency` adds each prefill's and the decodes' attention."""
        return self.iteration_times(self._dense_times, count_batch(tokens, entries))

    def _dense_times(self, tokens: FloatArray) -> FloatArray:
        """Linear, element-wise and embedding time: what depends on the token count alone."""
        m, tp = self.model, self.tp
        h, dt = m.hidden, m.dtype_bytes
        q_out = m.hidden // tp
        kv_out = m.kv_heads_per_gpu(tp) * m.head_dim
        inter = m.intermediate // tp
        gemms = ((h, q_out + 2 * kv_out), (q_out, h), (h, 2 * inter), (inter, h))
        per_layer = np.zeros_like(tokens)
        for k, n in gemms:
            per_layer += self._gemm(tokens, k, n)
        elementwise = dt * (10 * h + 2 * (q_out + kv_out) + 3 * inter)
        per_layer += tokens * elementwise / self._bandwidth
        embedding = tokens * (2 * h * dt) / self._bandwidth
        return m.layers * per_layer + embedding

    def _dense_time(self, tokens: float) -> float:
        """`_dense_times` of one token count, on Python floats in the same order."""
        t = self.terms
        flops, bandwidth, dt = t.gemm_flops, t.bandwidth, t.dtype_bytes
        per_layer = 0.0
        for k, n in t.gemms:
            per_layer += max(
                2.0 * k * n * tokens / flops, dt * (k * n + tokens * (k + n)) / bandwidth
            )
        per_layer += tokens * t.elementwise / bandwidth
        return t.layers * per_layer + tokens * t.embedding / bandwidth

    def _gemm(self, tokens: FloatArray, k: int, n: int) -> FloatArray:
        """Roofline time of a (tokens × k) · (k × n) matrix product."""
        flops = 2.0 * k * n * tokens
        bytes_moved = self.model.dtype_bytes * (k * n + tokens * (k + n))
        return np.maximum(flops / self._flops, bytes_moved / self._bandwidth)

    @property
    def _flops(self) -> float:
        return self.gpu.peak_flops * self.gemm_efficiency

    @property
    def _bandwidth(self) -> float:
        return self.gpu.memory_bandwidth * self.memory_efficiency

    def _attention_terms(
        self, chunks: FloatArray, contexts: FloatArray
    ) -> tuple[FloatArray, FloatArray]:
        """Per-layer attention FLOPs and bytes of each request: c new tokens over u cached."""
        flops_token, kv_token, qo_token = self._attention_coefficients
        flops = flops_token * chunks * (contexts + 0.5 * chunks)
        return flops, kv_token * (contexts + 2.0 * chunks) + qo_token * chunks

    def _decode_terms(
        self, decodes: FloatArray, context: FloatArray
    ) -> tuple[FloatArray, FloatArray]:
        """`_attention_terms` summed over `decodes` requests with c = 1 and Σu = `context`."""
        flops_token, kv_token, qo_token = self._attention_coefficients
        flops = flops_token * (context + 0.5 * decodes)
        return flops, kv_token * (context + 2.0 * decodes) + qo_token * decodes

    @property
    def _attention_coefficients(self) -> tuple[float, float, float]:
        """FLOPs per (query, key) pair, KV bytes per token, query+output bytes per token."""
        m = self.model
        heads, kv_heads = m.heads // self.tp, m.kv_heads_per_gpu(self.tp)
        return (
            4.0 * heads * m.head_dim,
            float(2 * kv_heads * m.head_dim * m.dtype_bytes),
            float(2 * heads * m.head_dim * m.dtype_bytes),
        )

    def _attention_time(self, flops: FloatArray, bytes_moved: FloatArray) -> FloatArray:
        """Roofline time of attention over all layers."""
        compute = flops / (self.gpu.peak_flops * self.attention_efficiency)
        return self.model.layers * np.maximum(compute, bytes_moved / self._bandwidth)

    def summarize(self, chunks: IntArray, contexts: IntArray) -> BatchSummary:
        """The one-entry summary of a checked, non-empty batch (for `iteration_times`)."""
        is_prefill = chunks > 1
        prefill_c = chunks[is_prefill].astype(np.float64)
        flops, bytes_moved = self._attention_terms(prefill_c, contexts[is_prefill].astype(float))
        prefill_attention = float(np.sum(self._attention_time(flops, bytes_moved)))
        return BatchSummary(
            tokens=np.array([float(chunks.sum())]),
            requests=np.array([float(chunks.size)]),
            decodes=np.array([float(chunks.size - prefill_c.size)]),
            decode_context=np.array([float(contexts[~is_prefill].sum())]),
            prefill_attention=np.array([prefill_attention]),
        )

    def iteration_times(self, dense: DenseTimes, batch: BatchSummary) -> FloatArray:
        """Iteration time for each entry of `batch`, with `dense` giving the token-count part:
        the seam the scalar path (`scalar_roofline`) and the models laid over a roofline
        (`overlay`) build on."""
        m, tp = self.model, self.tp
        flops, bytes_moved = self._decode_terms(batch.decodes, batch.decode_context)
        decode_attention = self._attention_time(flops, bytes_moved)
        lm_head = self._gemm(batch.requests, m.hidden, m.vocab // tp)
        total = dense(batch.tokens) + batch.prefill_attention + decode_attention + lm_head
        if tp > 1:
            link = self.gpu.link_bandwidth * self.link_efficiency
            step = self.gpu.link_latency
            activations = batch.tokens * (m.hidden * m.dtype_bytes / tp) / link
            total += (m.layers * 2 * 2 * (tp - 1)) * (step + activations)
            logits = batch.requests * (m.vocab * m.dtype_bytes / tp) / link
            total += (tp - 1) * (step + logits)
        return total + self.overhead


def lognormal(latency: float, sigma: float, z: float) -> float:
    """`latency` times exp(sigma · z): the log-normal noise of one standard normal z."""
    return latency * math.exp(sigma * z)


def noisy(latency: float, sigma: float, rng: np.random.Generator) -> float:
    """`latency` times a log-normal factor with median 1; exactly `latency` at sigma 0."""
    return lognormal(latency, sigma, float(rng.standard_normal()))
