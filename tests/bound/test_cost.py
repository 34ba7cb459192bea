"""The bound reads each hardware model right: the latency is its count part plus the
attention, exactly, and the bound's lower cost of any batch is below its latency."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slidingpolicy.bound.cost import Attention, linear_cost
from slidingpolicy.runs.specs import HardwareSpec
from tests.bound.conftest import HARDWARE, cost, hardware

batches = st.lists(
    st.tuples(st.one_of(st.just(1), st.integers(2, 3000)), st.integers(0, 8000)),
    min_size=1,
    max_size=40,
)
"""Batches of (chunk, context): decodes (chunk 1) and prefill chunks, mixed."""


def _attention(attention: Attention, chunks: np.ndarray, contexts: np.ndarray) -> float:
    """The roofline's attention of a batch: each prefill chunk's, and the decodes' together."""
    prefill = chunks > 1
    c, u = chunks[prefill].astype(float), contexts[prefill].astype(float)
    pairs = attention.seconds_per_pair * c * (u + c / 2)
    moved = attention.seconds_per_cached * (u + 2 * c) + attention.seconds_per_new * c
    decodes = float((~prefill).sum())
    context = np.array([float(contexts[~prefill].sum())])
    group = max(
        float(attention.decode_compute(context, np.array([decodes]))[0]),
        float(attention.decode_memory(context, np.array([decodes]))[0]),
    )
    return float(np.maximum(pairs, moved).sum()) + group


@pytest.mark.parametrize("spec", HARDWARE, ids=lambda s: s.gpu)
@settings(max_examples=40, deadline=None)
@given(batch=batches)
def test_latency_is_the_count_part_plus_the_attention(
    spec: HardwareSpec, batch: list[tuple[int, int]]
) -> None:
    model = hardware(spec)
    chunks = np.array([c for c, _ in batch], dtype=np.int64)
    contexts = np.array([u for _, u in batch], dtype=np.int64)
    counted = model.count_seconds(  # type: ignore[attr-defined]
        np.array([float(chunks.sum())]), np.array([float(chunks.size)])
    )[0]
    parts = counted + _attention(cost(spec).attention, chunks, contexts)
    assert parts == pytest.approx(model.latency(chunks, contexts), rel=1e-9)


@pytest.mark.parametrize("spec", HARDWARE, ids=lambda s: s.gpu)
@settings(max_examples=40, deadline=None)
@given(batch=batches)
def test_the_lower_cost_of_a_batch_is_below_its_latency(
    spec: HardwareSpec, batch: list[tuple[int, int]]
) -> None:
    bound = cost(spec)
    chunks = np.array([c for c, _ in batch], dtype=np.int64)
    contexts = np.array([u for _, u in batch], dtype=np.int64)
    tokens = np.array([float(chunks.sum())])
    entries = np.array([float(chunks.size)])
    least = bound.tokens(tokens)[0] + bound.entries(entries)[0]
    least += _attention(bound.attention, chunks, contexts)
    assert least <= hardware(spec).latency(chunks, contexts)
    assert bound.min_latency <= hardware(spec).latency(chunks, contexts)


@settings(max_examples=300, deadline=None)
@given(
    st.integers(1, 6000),
    st.lists(st.integers(1, 4000), min_size=1, max_size=30),
    st.integers(0, 50),
)
def test_prefill_attention_is_below_any_chunking(prompt: int, cuts: list[int], ones: int) -> None:
    """However a prompt is cut — at most `ones` chunks of one token, which run with the
    decodes — its chunks of more than one token take at least `Attention.prefill`."""
    attention = cost(HARDWARE[0]).attention
    chunks, done = [], 0
    for c in [1] * ones + cuts:
        c = min(c, prompt - done)
        if c > 0:
            chunks.append(c)
            done += c
    if done < prompt:
        chunks.append(prompt - done)
    ones_used = sum(c == 1 for c in chunks)
    spent, u = 0.0, 0
    for c in chunks:
        if c > 1:
            pairs = attention.seconds_per_pair * c * (u + c / 2)
            moved = attention.seconds_per_cached * (u + 2 * c) + attention.seconds_per_new * c
            spent += max(pairs, moved)
        u += c
    least = attention.prefill(np.array([float(prompt)]), np.array([float(ones_used)]))[0]
    assert least <= spent * (1 + 1e-12)


def test_linear_cost_is_the_oracles_model() -> None:
    linear = linear_cost(0.01, 1e-4)
    assert linear.tokens(np.array([500.0]))[0] == pytest.approx(0.01 + 0.05)
    assert linear.entries(np.array([30.0]))[0] == 0.0
    assert linear.min_latency == pytest.approx(0.0101)
