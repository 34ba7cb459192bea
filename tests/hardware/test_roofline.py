"""The roofline model obeys the physics it claims: one test per claim."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from slidingpolicy.errors import InvalidRecordError
from slidingpolicy.hardware import RooflineModel, build_hardware, default_hardware, gpu, model

CONFIGS = [
    ("rtx3090", "qwen2.5-7b", 1),
    ("rtx3090", "qwen2.5-7b", 2),
    ("rtx3090", "llama3-8b", 2),
    ("a100-80g", "llama3-8b", 1),
    ("a100-80g", "qwen2.5-7b", 4),
    ("h100", "llama3-8b", 8),
]
HARDWARE = [RooflineModel(gpu(g), model(m), tp) for g, m, tp in CONFIGS]

hardware = st.sampled_from(HARDWARE)
chunk = st.integers(1, 4096)
context = st.integers(0, 32768)
batch = st.lists(st.tuples(chunk, context), max_size=48)


def arrays(pairs: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    chunks = np.array([c for c, _ in pairs], dtype=np.int64)
    contexts = np.array([u for _, u in pairs], dtype=np.int64)
    return chunks, contexts


def no_less(after: float, before: float) -> bool:
    """`after` >= `before`, up to the rounding of a differently ordered float sum."""
    return after >= before * (1 - 1e-12)


@given(hardware, st.integers(1, 256), st.lists(context, min_size=1, max_size=1))
def test_decode_is_never_faster_than_streaming_the_weights(
    hw: RooflineModel, n: int, u: list[int]
) -> None:
    floor = hw.model.streamed_weight_bytes / (hw.tp * hw.gpu.memory_bandwidth)
    assert hw.latency(np.ones(n, np.int64), np.full(n, u[0], np.int64)) >= floor


@given(hardware, st.lists(chunk, min_size=1, max_size=8))
def test_prefill_throughput_never_exceeds_peak_flops(hw: RooflineModel, chunks: list[int]) -> None:
    c = np.array(chunks, dtype=np.int64)
    tokens_per_second = c.sum() / hw.latency(c, np.zeros_like(c))
    flops_per_token = 2 * hw.model.layers * hw.model.layer_params
    assert tokens_per_second <= hw.tp * hw.gpu.peak_flops / flops_per_token


@given(hardware, batch, st.data())
def test_adding_tokens_to_a_chunk_never_makes_the_iteration_faster(
    hw: RooflineModel, pairs: list[tuple[int, int]], data: st.DataObject
) -> None:
    if not pairs:
        pairs = [(1, 0)]
    chunks, contexts = arrays(pairs)
    i = data.draw(st.integers(0, len(pairs) - 1))
    more = chunks.copy()
    more[i] += data.draw(st.integers(1, 2048))
    assert no_less(hw.latency(more, contexts), hw.latency(chunks, contexts))


@given(hardware, batch, chunk, context, st.data())
def test_adding_a_request_never_makes_the_iteration_faster(
    hw: RooflineModel, pairs: list[tuple[int, int]], c: int, u: int, data: st.DataObject
) -> None:
    where = data.draw(st.integers(0, len(pairs)))
    chunks, contexts = arrays(pairs)
    more_c, more_u = arrays([*pairs[:where], (c, u), *pairs[where:]])
    assert no_less(hw.latency(more_c, more_u), hw.latency(chunks, contexts))


@given(hardware, batch)
def test_decode_latencies_equal_per_iteration_latency_to_the_last_bit(
    hw: RooflineModel, pairs: list[tuple[int, int]]
) -> None:
    n = max(1, len(pairs))
    per_request = np.array([u for _, u in pairs] or [0], dtype=np.int64)
    contexts = [per_request + k for k in range(5)]
    totals = np.array([c.sum() for c in contexts], dtype=np.int64)
    run = hw.decode_latencies(n, totals)
    one_by_one = [hw.latency(np.ones(n, np.int64), c) for c in contexts]
    assert run.tolist() == one_by_one


def test_decode_latencies_of_no_decodes_are_zero() -> None:
    hw = default_hardware()
    assert hw.decode_latencies(0, np.zeros(3, np.int64)).tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("hw", HARDWARE, ids=lambda h: h.name)
def test_kv_capacity_is_positive_whole_blocks(hw: RooflineModel) -> None:
    assert hw.kv_capacity_tokens > 0
    assert hw.kv_capacity_tokens % 16 == 0
    assert hw.kv_block_size == 16


def test_kv_capacity_of_the_default_follows_from_memory_weights_and_reserve() -> None:
    hw = RooflineModel(gpu("rtx3090"), model("qwen2.5-7b"), 2)
    per_gpu = int(0.9 * 24 * 2**30) - hw.model.weight_bytes // 2 - 2**30
    expected = per_gpu // (hw.model.kv_bytes_per_token // 2) // 16 * 16
    assert hw.kv_capacity_tokens == expected


def test_a_model_that_does_not_fit_is_rejected() -> None:
    with pytest.raises(InvalidRecordError, match="memory"):
        RooflineModel(gpu("rtx3090"), model("llama3-8b"), 1, activation_reserve_bytes=8 * 2**30)


@given(hardware, batch, st.integers(0, 2**32))
def test_sample_is_deterministic_for_the_same_seed(
    hw: RooflineModel, pairs: list[tuple[int, int]], seed: int
) -> None:
    chunks, contexts = arrays(pairs)
    first = hw.sample(chunks, contexts, np.random.default_rng(seed))
    assert first == hw.sample(chunks, contexts, np.random.default_rng(seed))


@given(batch, st.integers(0, 2**32))
def test_sample_at_sigma_zero_is_exactly_latency(pairs: list[tuple[int, int]], seed: int) -> None:
    hw = build_hardware(noise_sigma=0.0)
    chunks, contexts = arrays(pairs)
    assert hw.sample(chunks, contexts, np.random.default_rng(seed)) == hw.latency(chunks, contexts)


def test_sample_noise_has_the_configured_log_spread() -> None:
    hw = build_hardware(noise_sigma=0.03)
    chunks, contexts = np.array([512, 1, 1]), np.array([0, 900, 40])
    rng = np.random.default_rng(7)
    logs = [math.log(hw.sample(chunks, contexts, rng) / hw.latency(chunks, contexts))]
    logs += [
        math.log(hw.sample(chunks, contexts, rng) / hw.latency(chunks, contexts))
        for _ in range(3999)
    ]
    assert abs(float(np.mean(logs))) < 0.003
    assert 0.027 < float(np.std(logs)) < 0.033


def test_an_empty_batch_takes_no_time() -> None:
    empty = np.zeros(0, np.int64)
    assert default_hardware().latency(empty, empty) == 0.0


@pytest.mark.parametrize(
    ("chunks", "contexts", "field"),
    [([0], [5], "chunks"), ([3], [-1], "contexts"), ([1, 2], [0], "chunks")],
)
def test_a_malformed_batch_is_rejected(chunks: list[int], contexts: list[int], field: str) -> None:
    with pytest.raises(InvalidRecordError, match=field):
        default_hardware().latency(np.array(chunks), np.array(contexts))


def test_a_tp_degree_that_does_not_divide_the_heads_is_rejected() -> None:
    with pytest.raises(InvalidRecordError, match="tp"):
        RooflineModel(gpu("h100"), model("qwen2.5-7b"), 3)


def test_the_default_is_qwen_on_two_rtx3090() -> None:
    assert default_hardware().name == "qwen2.5-7b on 2× rtx3090 (TP2)"


def test_default_decode_of_32_requests_at_1k_context_takes_15_to_30_ms() -> None:
    hw = default_hardware()
    latency = hw.latency(np.ones(32, np.int64), np.full(32, 1024, np.int64))
    assert 0.015 <= latency <= 0.030
