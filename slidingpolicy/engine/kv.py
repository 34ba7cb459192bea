"""KV memory in blocks (vLLM's paged cache): who holds how many blocks, what is free.

A request holds ceil(kv_tokens / block) blocks, where kv_tokens counts the KV slots its scheduled
tokens have written since it was last admitted (each scheduled token writes one slot). Blocks
are not shared between requests, so one integer (`SchedulerState.kv_free_tokens`) can only
approximate the memory: we report the slots of the free blocks plus one slot for each decoding
request whose last block still has room (a decode writes one token per iteration). A plan within
that number may still need a block more than is free (a prefill chunk cannot use another
request's spare slots); the engine then preempts, as vLLM does (`simulator`).

The cache is the engine's own mutable bookkeeping; nothing here is shown to a policy.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from slidingpolicy.errors import InvalidRecordError

IntArray = NDArray[np.int64]


def blocks_for(tokens: IntArray | int, block: int) -> IntArray | int:
    """ceil(tokens / block), elementwise."""
    return -(-tokens // block)


class KVCache:
    """Blocks of `block` tokens, `capacity_tokens // block` of them, held per request index."""

    def __init__(self, capacity_tokens: int, block: int, num_requests: int) -> None:
        if block < 1 or capacity_tokens < block:
            raise InvalidRecordError(
                "kv cache", "capacity_tokens", f"={capacity_tokens} holds no block of {block}"
            )
        self.block = block
        self.total_blocks = capacity_tokens // block
        self.free_blocks = self.total_blocks
        self.tokens = np.zeros(num_requests, dtype=np.int64)
        self.blocks = np.zeros(num_requests, dtype=np.int64)

    @property
    def capacity_tokens(self) -> int:
        """Slots in all blocks."""
        return self.total_blocks * self.block

    @property
    def used_blocks(self) -> int:
        """Blocks held by some request."""
        return self.total_blocks - self.free_blocks

    def free_tokens(self, decoding: IntArray) -> int:
        """kv_free_tokens for the snapshot: free blocks' slots, plus one per decoding request
        (indices `decoding`) whose last block has room."""
        spare = int(np.count_nonzero(self.tokens[decoding] % self.block))
        return self.free_blocks * self.block + spare

    def needed(self, indices: IntArray, chunks: IntArray) -> IntArray:
        """New blocks each request needs to write `chunks` more slots."""
        held = self.blocks[indices]
        needed: IntArray = -(-(self.tokens[indices] + chunks) // self.block) - held
        return needed

    def write(self, indices: IntArray, chunks: IntArray) -> None:
        """Record `chunks` written slots per request; the caller checked the blocks are free."""
        tokens = self.tokens[indices] + chunks
        blocks: IntArray = blocks_for(tokens, self.block)  # type: ignore[assignment]
        self.free_blocks -= int(blocks.sum() - self.blocks[indices].sum())
        if self.free_blocks < 0:
            raise RuntimeError("kv cache overflow: the engine allocated past capacity")
        self.tokens[indices] = tokens
        self.blocks[indices] = blocks

    def release(self, index: int) -> None:
        """Free every block of request `index` (finished or preempted)."""
        self.free_blocks += int(self.blocks[index])
        self.blocks[index] = 0
        self.tokens[index] = 0

    def decode_run_length(self, indices: IntArray, limit: int) -> int:
        """How many decode-only iterations (one slot per request each) fit, at most `limit`."""
        tokens, held = self.tokens[indices], int(self.blocks[indices].sum())

        def fits(k: int) -> bool:
            total = int(blocks_for(tokens + k, self.block).sum())  # type: ignore[union-attr]
            return total - held <= self.free_blocks

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
