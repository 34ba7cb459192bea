"""The roofline's scalar path: one batch's iteration time on Python floats, every operation
in numpy's order, so bit for bit `RooflineModel.latency_arrays` and faster on small batches."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import attrs
import numpy as np

from slidingpolicy.errors import InvalidRecordError
from slidingpolicy.hardware.batch_summary import (
    BatchSummary,
    DenseTimes,
    FloatArray,
    IntArray,
    check_batch,
)
from slidingpolicy.hardware.catalog import GPU, ModelShape


@attrs.frozen(slots=True)
class ScalarTerms:
    """The constants `scalar_latency` needs, each computed by the expression the array path
    evaluates per call (so the same float)."""

    layers: int
    flops_token: float
    kv_token: float
    qo_token: float
    attention_flops: float
    gemm_flops: float
    bandwidth: float
    gemms: tuple[tuple[int, int], ...]
    dtype_bytes: int
    elementwise: int
    embedding: int
    lm_k: int
    lm_n: int


ScalarDense = Callable[[float], float]


class Roofline(Protocol):
    """What the scalar path reads of a roofline model (`RooflineModel`): its constants, its
    setting, and the array path's two steps, the batch summary and the iteration times."""

    @property
    def terms(self) -> ScalarTerms: ...

    @property
    def gpu(self) -> GPU: ...

    @property
    def model(self) -> ModelShape: ...

    @property
    def tp(self) -> int: ...

    @property
    def link_efficiency(self) -> float: ...

    @property
    def overhead(self) -> float: ...

    def summarize(self, chunks: IntArray, contexts: IntArray) -> BatchSummary: ...

    def iteration_times(self, dense: DenseTimes, batch: BatchSummary) -> FloatArray: ...


SCALAR_PREFILLS = 8
"""Below this many prefills numpy sums a batch's prefill attention one by one, as Python does;
from it on numpy sums pairwise, so the scalar path hands that sum to numpy."""


def scalar_latency(
    roofline: Roofline, chunks: IntArray, contexts: IntArray, dense: ScalarDense
) -> float:
    """`RooflineModel.iteration_times` of one batch on Python floats, `dense` giving the
    token-count part: every operation in numpy's order, so bit for bit the same value.

    Integer batches only (their sums are exact either way); others go through the arrays.
    """
    if chunks.ndim != 1 or chunks.shape != contexts.shape:
        check_batch(chunks, contexts)
    if chunks.dtype.kind not in "iu" or contexts.dtype.kind not in "iu":
        check_batch(chunks, contexts)
        if chunks.size == 0:
            return 0.0
        summary = roofline.summarize(chunks, contexts)
        return float(roofline.iteration_times(lambda t: np.array([dense(float(t[0]))]), summary)[0])
    return scalar_latency_of(roofline, chunks.tolist(), contexts.tolist(), dense)


def scalar_latency_of(
    roofline: Roofline, cs: list[int], us: list[int], dense: ScalarDense
) -> float:
    """`scalar_latency` of a batch given as lists of ints (chunks, contexts)."""
    if len(cs) != len(us) or (cs and (min(cs) < 1 or min(us) < 0)):
        check_batch(np.array(cs, dtype=np.int64), np.array(us, dtype=np.int64))
    if not cs:
        return 0.0
    t = roofline.terms
    flops_token, kv_token, qo_token = t.flops_token, t.kv_token, t.qo_token
    attention_flops, bandwidth, layers = t.attention_flops, t.bandwidth, t.layers
    prefill: list[float] = []
    decodes = 0
    decode_context = 0
    for c, u in zip(cs, us, strict=True):
        if c > 1:
            flops = flops_token * c * (u + 0.5 * c)
            moved = kv_token * (u + 2.0 * c) + qo_token * c
            prefill.append(layers * max(flops / attention_flops, moved / bandwidth))
        else:
            decodes += 1
            decode_context += u
    if len(prefill) < SCALAR_PREFILLS:
        prefill_attention = 0.0
        for seconds in prefill:
            prefill_attention += seconds
    else:
        prefill_attention = float(np.sum(np.array(prefill)))
    tokens = float(sum(cs))
    requests = float(len(cs))
    flops = flops_token * (decode_context + 0.5 * decodes)
    moved = kv_token * (decode_context + 2.0 * decodes) + qo_token * decodes
    decode_attention = layers * max(flops / attention_flops, moved / bandwidth)
    k, n = t.lm_k, t.lm_n
    lm_head = max(
        2.0 * k * n * requests / t.gemm_flops,
        t.dtype_bytes * (k * n + requests * (k + n)) / bandwidth,
    )
    total = dense(tokens) + prefill_attention + decode_attention + lm_head
    tp = roofline.tp
    if tp > 1:
        m = roofline.model
        link = roofline.gpu.link_bandwidth * roofline.link_efficiency
        step = roofline.gpu.link_latency
        activations = tokens * (m.hidden * m.dtype_bytes / tp) / link
        total += (layers * 2 * 2 * (tp - 1)) * (step + activations)
        logits = requests * (m.vocab * m.dtype_bytes / tp) / link
        total += (tp - 1) * (step + logits)
    return total + roofline.overhead


def scalar_decode_pricer(
    roofline: Roofline, num_decodes: int, dense: ScalarDense
) -> Callable[[int], float]:
    """`iteration_times` of a decode-only iteration (`decode_run`), `num_decodes` >= 1, as a
    function of its total context; what depends on the count alone is computed once, and the
    sum is taken in numpy's order (dense + 0 prefill attention + decode attention + LM head,
    then the links, then the overhead)."""
    if isinstance(num_decodes, bool) or not isinstance(num_decodes, int) or num_decodes < 1:
        raise InvalidRecordError("decode run", "num_decodes", f"={num_decodes!r} must be >= 1")
    t = roofline.terms
    n = float(num_decodes)
    flops_token, kv_token, qo_token = t.flops_token, t.kv_token, t.qo_token
    attention_flops, bandwidth, layers = t.attention_flops, t.bandwidth, t.layers
    head = dense(n) + 0.0
    k, m_out = t.lm_k, t.lm_n
    lm_head = max(
        2.0 * k * m_out * n / t.gemm_flops,
        t.dtype_bytes * (k * m_out + n * (k + m_out)) / bandwidth,
    )
    links: tuple[float, ...] = ()
    tp = roofline.tp
    if tp > 1:
        m = roofline.model
        link = roofline.gpu.link_bandwidth * roofline.link_efficiency
        step = roofline.gpu.link_latency
        activations = n * (m.hidden * m.dtype_bytes / tp) / link
        logits = n * (m.vocab * m.dtype_bytes / tp) / link
        links = ((layers * 2 * 2 * (tp - 1)) * (step + activations), (tp - 1) * (step + logits))
    overhead = roofline.overhead
    half, twice, queries = 0.5 * n, 2.0 * n, qo_token * n

    def price(total_context: int) -> float:
        flops = flops_token * (total_context + half)
        moved = kv_token * (total_context + twice) + queries
        total = head + layers * max(flops / attention_flops, moved / bandwidth) + lm_head
        for term in links:
            total += term
        return total + overhead

    return price
