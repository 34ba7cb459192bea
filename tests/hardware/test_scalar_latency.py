"""`latency` (the scalar fast path) equals `latency_arrays` (numpy) to the last bit."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slidingpolicy.errors import InvalidRecordError
from slidingpolicy.hardware import ProfiledModel, RooflineModel, gpu, model
from slidingpolicy.hardware.scalar_roofline import SCALAR_PREFILLS

CONFIGS = [
    ("rtx3090", "qwen2.5-7b", 1),
    ("rtx3090", "qwen2.5-7b", 2),
    ("a100-80g", "llama3-8b", 1),
    ("a100-80g", "qwen2.5-7b", 4),
    ("h100", "llama3-8b", 8),
]
HARDWARE = [RooflineModel(gpu(g), model(m), tp) for g, m, tp in CONFIGS]

# Mostly decodes (chunk 1) with some prefills, up to past the pairwise-sum threshold.
chunk = st.one_of(st.just(1), st.integers(1, 8192))
context = st.integers(0, 65536)
batch = st.lists(st.tuples(chunk, context), max_size=3 * SCALAR_PREFILLS + 40)


def arrays(pairs: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    chunks = np.array([c for c, _ in pairs], dtype=np.int64)
    contexts = np.array([u for _, u in pairs], dtype=np.int64)
    return chunks, contexts


@settings(max_examples=400)
@given(st.sampled_from(HARDWARE), batch)
def test_roofline_scalar_latency_is_bit_identical(
    hw: RooflineModel, pairs: list[tuple[int, int]]
) -> None:
    chunks, contexts = arrays(pairs)
    reference = hw.latency_arrays(chunks, contexts)
    assert hw.latency(chunks, contexts) == reference
    assert hw.latency_of([c for c, _ in pairs], [u for _, u in pairs]) == reference


@pytest.mark.parametrize("hw", HARDWARE, ids=lambda h: h.name)
@pytest.mark.parametrize("prefills", range(2 * SCALAR_PREFILLS + 2))
def test_every_prefill_count_around_the_pairwise_threshold(
    hw: RooflineModel, prefills: int
) -> None:
    rng = np.random.default_rng(prefills)
    chunks = np.concatenate([rng.integers(2, 4096, prefills), np.ones(5, np.int64)])
    contexts = rng.integers(0, 20000, chunks.size)
    assert hw.latency(chunks, contexts) == hw.latency_arrays(chunks, contexts)


@pytest.mark.slow
@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch)
def test_profiled_scalar_latency_is_bit_identical(
    vidur_profile: Path, pairs: list[tuple[int, int]]
) -> None:
    profiled = ProfiledModel.from_csv(vidur_profile, HARDWARE[2])
    chunks, contexts = arrays(pairs)
    reference = profiled.latency_arrays(chunks, contexts)
    assert profiled.latency(chunks, contexts) == reference
    assert profiled.latency_of([c for c, _ in pairs], [u for _, u in pairs]) == reference


def test_float_batches_take_the_array_path() -> None:
    hw = HARDWARE[1]
    chunks = np.array([1.0, 300.0, 1.0])
    contexts = np.array([1000.0, 0.0, 77.0])
    assert hw.latency(chunks, contexts) == hw.latency_arrays(chunks, contexts)


@pytest.mark.parametrize(
    ("chunks", "contexts"),
    [([1, 0], [5, 5]), ([1, 2], [5, -1]), ([1, 2], [5]), ([[1]], [[1]])],
)
def test_bad_batches_raise_the_same_error_both_ways(chunks: list[int], contexts: list[int]) -> None:
    c, u = np.array(chunks, dtype=np.int64), np.array(contexts, dtype=np.int64)
    hw = HARDWARE[0]
    with pytest.raises(InvalidRecordError) as scalar:
        hw.latency(c, u)
    with pytest.raises(InvalidRecordError) as reference:
        hw.latency_arrays(c, u)
    assert str(scalar.value) == str(reference.value)
    if c.ndim == 1 and u.ndim == 1:
        with pytest.raises(InvalidRecordError) as listed:
            hw.latency_of(c.tolist(), u.tolist())
        assert str(listed.value) == str(reference.value)


@settings(max_examples=300)
@given(
    st.sampled_from(HARDWARE),
    st.integers(1, 512),
    st.lists(st.integers(0, 2**22), min_size=1, max_size=20),
)
def test_decode_pricer_is_bit_identical_to_decode_latencies(
    hw: RooflineModel, n: int, contexts: list[int]
) -> None:
    price = hw.decode_pricer(n)
    expected = hw.decode_latencies(n, np.array(contexts, dtype=np.int64)).tolist()
    assert [price(u) for u in contexts] == expected


@pytest.mark.slow
@settings(max_examples=100, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(1, 512), st.lists(st.integers(0, 2**22), min_size=1, max_size=20))
def test_profiled_decode_pricer_is_bit_identical(
    vidur_profile: Path, n: int, contexts: list[int]
) -> None:
    profiled = ProfiledModel.from_csv(vidur_profile, HARDWARE[2])
    price = profiled.decode_pricer(n)
    expected = profiled.decode_latencies(n, np.array(contexts, dtype=np.int64)).tolist()
    assert [price(u) for u in contexts] == expected


@pytest.mark.parametrize("n", [0, -1, True])
def test_decode_pricer_needs_a_decode(n: int) -> None:
    with pytest.raises(InvalidRecordError):
        HARDWARE[0].decode_pricer(n)
