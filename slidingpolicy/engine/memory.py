"""Fitting a planned batch into the KV cache, as vLLM does (module doc of `simulator`).

First the new blocks of the requests that hold some (decodes; an admitted prefill needs none),
preempting the newest holder until they fit; then, in plan order, each waiting request whose
whole prompt fits in what is left is admitted, its prompt's blocks reserved at once, and the
others are dropped.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from slidingpolicy.engine.kv import KVCache, blocks_for


@attrs.frozen(slots=True)
class FittedBatch:
    """The batch that fits: its request indices and chunks, whether it lost any allocation of
    the plan, and whether a request was preempted to make room."""

    indices: list[int]
    chunks: list[int]
    dropped: bool
    preempted: bool


def fit_kv(
    kv: KVCache,
    prompt: list[int],
    indices: list[int],
    chunks: list[int],
    preempt: Callable[[int], None],
) -> FittedBatch:
    """The part of the batch (`indices`, `chunks`) that fits the cache. `prompt` holds each
    request's prompt; `preempt(i)` preempts request i (freeing its blocks)."""
    blocks = kv.block_list
    if all(blocks[i] for i in indices) and kv.needed(indices, chunks) <= kv.free_blocks:
        return FittedBatch(indices, chunks, False, False)
    preempted = False
    while True:
        holding = [j for j, i in enumerate(indices) if blocks[i]]
        grow = kv.needed([indices[j] for j in holding], [chunks[j] for j in holding])
        if grow <= kv.free_blocks:
            break
        victim = kv.newest_holder(kv.holders)
        if victim is None:
            raise RuntimeError("kv cache: a batch needs blocks but no request holds any")
        preempt(victim)
        preempted = True
        kept = [(i, c) for i, c in zip(indices, chunks, strict=True) if i != victim]
        indices, chunks = [i for i, _ in kept], [c for _, c in kept]
    if len(holding) == len(indices):
        return FittedBatch(indices, chunks, preempted, preempted)
    free, block = kv.free_blocks - grow, kv.block
    admitted: list[tuple[int, int]] = []
    for i, c in zip(indices, chunks, strict=True):
        if not blocks[i]:
            need = blocks_for(prompt[i], block)
            if need > free:
                continue
            free -= need
            kv.admit(i, prompt[i])
        admitted.append((i, c))
    dropped = preempted or len(admitted) < len(indices)
    return FittedBatch([i for i, _ in admitted], [c for _, c in admitted], dropped, preempted)
