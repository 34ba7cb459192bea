"""KV blocks: capacity in whole blocks, runs of decodes that fit, release to zero."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from slidingpolicy.engine.kv import KVCache, blocks_for


@given(
    st.lists(st.integers(1, 100), min_size=1, max_size=6),
    st.integers(0, 30),
    st.integers(1, 80),
)
def test_decode_run_length_is_the_longest_run_that_fits(
    tokens: list[int], extra_blocks: int, limit: int
) -> None:
    n = len(tokens)
    held = sum(-(-t // 16) for t in tokens)
    kv = KVCache((held + extra_blocks) * 16, 16, n)
    idx = np.arange(n, dtype=np.int64)
    kv.write(idx, np.array(tokens, dtype=np.int64))
    steps = kv.decode_run_length(idx, limit)
    scan = 0
    for k in range(1, limit + 1):
        if sum(-(-(t + k) // 16) for t in tokens) - held <= extra_blocks:
            scan = k
        else:
            break
    assert steps == scan


def test_free_tokens_counts_free_blocks_and_decode_room() -> None:
    kv = KVCache(160, 16, 3)
    kv.write(np.array([0, 1], dtype=np.int64), np.array([16, 20], dtype=np.int64))
    assert kv.free_blocks == 10 - 3
    decoding = np.array([0, 1], dtype=np.int64)
    assert kv.free_tokens(decoding) == 7 * 16 + 1
    kv.release(0)
    kv.release(1)
    assert kv.used_blocks == 0


@given(st.integers(1, 200), st.lists(st.integers(1, 64), min_size=1, max_size=8))
def test_an_admitted_prefill_writes_its_prompt_within_its_reservation(
    prompt: int, chunks: list[int]
) -> None:
    kv = KVCache(400 * 16, 16, 1)
    kv.admit(0, prompt)
    reserved = -(-prompt // 16)
    assert kv.used_blocks == reserved
    written = 0
    for c in chunks:
        c = min(c, prompt - written)
        if c == 0:
            break
        assert kv.needed([0], [c]) == 0
        assert kv.free_tokens([0]) == kv.free_blocks * 16 + prompt - written
        kv.write([0], [c])
        written += c
        assert kv.used_blocks == reserved
    kv.release(0)
    assert kv.used_blocks == 0
    assert kv.free_tokens([0]) == kv.capacity_tokens


def test_admission_refuses_a_prompt_that_does_not_fit() -> None:
    kv = KVCache(64, 16, 2)
    kv.admit(0, 40)
    with pytest.raises(RuntimeError, match="does not fit"):
        kv.admit(1, 17)


@given(st.lists(st.integers(1, 100), min_size=1, max_size=6), st.integers(0, 30))
def test_free_tokens_over_a_run_are_those_after_each_iteration(
    tokens: list[int], extra_blocks: int
) -> None:
    n = len(tokens)
    kv = KVCache((sum(blocks_for(t, 16) for t in tokens) + extra_blocks) * 16, 16, n)
    for i, t in enumerate(tokens):
        kv.admit(i, t)
        kv.write([i], [t])
    live = list(range(n))
    steps = kv.decode_run_length(live, 50)
    over_run = kv.free_tokens_over_run(live, steps)
    for j in range(steps):
        assert over_run[j] == kv.free_tokens(live), j
        kv.write(live, [1] * n)
