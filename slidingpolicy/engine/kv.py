"""KV memory in blocks (vLLM's paged cache): who holds how many blocks, what is free.

A request holds ceil(kv_tokens / block) blocks, where kv_tokens counts the KV slots its scheduled
tokens have written since it was last admitted (each scheduled token writes one slot). Blocks
are not shared between requests, so one integer (`SchedulerState.kv_free_tokens`) can only
approximate the memory: we report the slots of the free blocks plus one slot for each decoding
request whose last block still has room (a decode writes one token per iteration). A plan within
that number may still need a block more than is free (a prefill chunk cannot use another
request's spare slots); the engine then preempts, as vLLM does (`simulator`).

The cache is the engine's own mutable bookkeeping; nothing here is shown to a policy. It keeps
its columns as Python lists (the engine touches a handful of requests per iteration, where
lists are several times cheaper than numpy); `tokens` and `blocks` read them as arrays.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
from numpy.typing import NDArray

from slidingpolicy.errors import InvalidRecordError

IntArray = NDArray[np.int64]


def blocks_for(tokens: IntArray | int, block: int) -> IntArray | int:
    """ceil(tokens / block), elementwise."""
    return -(-tokens // block)


class KVCache:
    """Blocks of `block` tokens, `capacity_tokens // block` of them, held per request index.

    Methods take request indices (and chunks) as lists or 1-D integer arrays.
    """

    def __init__(self, capacity_tokens: int, block: int, num_requests: int) -> None:
        if block < 1 or capacity_tokens < block:
            raise InvalidRecordError(
                "kv cache", "capacity_tokens", f"={capacity_tokens} holds no block of {block}"
            )
        self.block = block
        self.total_blocks = capacity_tokens // block
        self.free_blocks = self.total_blocks
        self.token_list: list[int] = [0] * num_requests
        """Slots each request has written since it was last admitted."""
        self.block_list: list[int] = [0] * num_requests
        """Blocks each request holds."""

    @property
    def tokens(self) -> IntArray:
        """`token_list` as an array (a copy)."""
        return np.array(self.token_list, dtype=np.int64)

    @property
    def blocks(self) -> IntArray:
        """`block_list` as an array (a copy)."""
        return np.array(self.block_list, dtype=np.int64)

    @property
    def capacity_tokens(self) -> int:
        """Slots in all blocks."""
        return self.total_blocks * self.block

    @property
    def used_blocks(self) -> int:
        """Blocks held by some request."""
        return self.total_blocks - self.free_blocks

    def free_tokens(self, decoding: Iterable[int] | IntArray) -> int:
        """kv_free_tokens for the snapshot: free blocks' slots, plus one per decoding request
        (indices `decoding`) whose last block has room."""
        tokens, block = self.token_list, self.block
        spare = 0
        for i in _ints(decoding):
            if tokens[i] % block:
                spare += 1
        return self.free_blocks * self.block + spare

    def needed(
        self, indices: Sequence[int] | IntArray, chunks: Sequence[int] | IntArray
    ) -> IntArray:
        """New blocks each request needs to write `chunks` more slots."""
        return np.array(self._needed(_ints(indices), _ints(chunks)), dtype=np.int64)

    def needed_total(self, indices: Sequence[int], chunks: Sequence[int]) -> int:
        """Σ `needed`: the new blocks the whole batch needs."""
        return sum(self._needed(indices, chunks))

    def _needed(self, indices: Sequence[int], chunks: Sequence[int]) -> list[int]:
        tokens, blocks, block = self.token_list, self.block_list, self.block
        return [
            -(-(tokens[i] + c) // block) - blocks[i] for i, c in zip(indices, chunks, strict=True)
        ]

    def write(self, indices: Sequence[int] | IntArray, chunks: Sequence[int] | IntArray) -> None:
        """Record `chunks` written slots per request; the caller checked the blocks are free."""
        tokens, blocks, block = self.token_list, self.block_list, self.block
        index, chunk = _ints(indices), _ints(chunks)
        grown = 0
        for i, c in zip(index, chunk, strict=True):
            t = tokens[i] + c
            b = -(-t // block)
            grown += b - blocks[i]
            tokens[i] = t
            blocks[i] = b
        self.free_blocks -= grown
        if self.free_blocks < 0:
            raise RuntimeError("kv cache overflow: the engine allocated past capacity")

    def release(self, index: int) -> None:
        """Free every block of request `index` (finished or preempted)."""
        self.free_blocks += self.block_list[index]
        self.block_list[index] = 0
        self.token_list[index] = 0

    def newest_holder(self, candidates: Iterable[int]) -> int | None:
        """The highest index among `candidates` that holds a block (None if none does)."""
        blocks = self.block_list
        held = [i for i in candidates if blocks[i]]
        return max(held) if held else None

    def decode_run_length(self, indices: Sequence[int] | IntArray, limit: int) -> int:
        """How many decode-only iterations (one slot per request each) fit, at most `limit`."""
        index = _ints(indices)
        tokens = [self.token_list[i] for i in index]
        held = sum(self.block_list[i] for i in index)
        block, free = self.block, self.free_blocks

        def fits(k: int) -> bool:
            return sum([-(-(t + k) // block) for t in tokens]) - held <= free

        if limit <= 0 or not fits(1):
            return 0
        lo, hi = 1, limit
        if fits(hi):
            return hi
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if fits(mid):
                lo = mid
            else:
                hi = mid
        return lo


def _ints(values: Iterable[int] | IntArray) -> Sequence[int]:
    """Python ints from a list or an integer array."""
    if isinstance(values, np.ndarray):
        listed: list[int] = values.tolist()
        return listed
    return values if isinstance(values, list | tuple) else list(values)
