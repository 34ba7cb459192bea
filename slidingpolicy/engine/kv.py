"""KV memory in blocks (vLLM's paged cache): who holds how many blocks, what is free.

A request is *admitted* when its prefill starts: it then holds the blocks of its whole prompt
at once (vLLM's block manager does the same), so a prefill that has started can always finish
— partial prefills can never fill the cache and wait on each other for ever. Each scheduled
token writes one slot; a decode takes a new block when its last one is full.

Blocks are not shared between requests, so one integer (`SchedulerState.kv_free_tokens`)
can only approximate the memory. We report the slots a plan can write: those of the free
blocks, each admitted prefill's reserved remainder, and one slot for each decoding request
whose last block still has room (a decode writes one token per iteration). A plan within that
number may still not fit (a prefill cannot use another request's slots); the engine then
drops the prefills that cannot be admitted and preempts, as vLLM does (`simulator`).

The cache is the engine's own mutable bookkeeping; nothing here is shown to a policy. It keeps
its columns as Python lists (the engine touches a handful of requests per iteration, where
lists are several times cheaper than numpy).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import overload

import numpy as np
from numpy.typing import NDArray

from slidingpolicy.errors import InvalidRecordError

IntArray = NDArray[np.int64]


@overload
def blocks_for(tokens: int, block: int) -> int: ...


@overload
def blocks_for(tokens: IntArray, block: int) -> IntArray: ...


def blocks_for(tokens: IntArray | int, block: int) -> IntArray | int:
    """ceil(tokens / block), elementwise: the blocks that hold `tokens` slots."""
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
        self.prompt_list: list[int] = [0] * num_requests
        """The prompt each request was admitted with (slots reserved for its prefill)."""
        self.holders: dict[int, None] = {}
        """The requests holding blocks (a dict, for removal in O(1))."""

    @property
    def capacity_tokens(self) -> int:
        """Slots in all blocks."""
        return self.total_blocks * self.block

    @property
    def used_blocks(self) -> int:
        """Blocks held by some request."""
        return self.total_blocks - self.free_blocks

    def free_tokens(self, live: Iterable[int] | IntArray) -> int:
        """kv_free_tokens for the snapshot: free blocks' slots, plus, among the requests `live`,
        each admitted prefill's unwritten prompt slots and one slot per decoding request whose
        last block has room."""
        tokens, prompts, blocks, block = (
            self.token_list,
            self.prompt_list,
            self.block_list,
            self.block,
        )
        spare = 0
        for i in _ints(live):
            if not blocks[i]:
                continue
            left = prompts[i] - tokens[i]
            if left > 0:
                spare += left
            elif tokens[i] % block:
                spare += 1
        return self.free_blocks * self.block + spare

    def free_tokens_over_run(self, indices: Sequence[int], steps: int) -> list[int]:
        """`free_tokens(indices)` before each of `steps` decode-only iterations from now, each
        writing one slot per request of `indices` (every one holding blocks, its prompt
        written)."""
        block = self.block
        tokens = [self.token_list[i] for i in indices]
        held = [self.block_list[i] for i in indices]
        result: list[int] = []
        for j in range(steps):
            grown = sum(
                [max(blocks_for(t + j, block) - h, 0) for t, h in zip(tokens, held, strict=True)]
            )
            spare = sum([1 for t in tokens if (t + j) % block])
            result.append((self.free_blocks - grown) * block + spare)
        return result

    def admit(self, index: int, prompt_tokens: int) -> None:
        """Reserve the blocks of request `index`'s whole prompt as its prefill starts."""
        need = blocks_for(prompt_tokens, self.block)
        if self.block_list[index] or need > self.free_blocks:
            raise RuntimeError("kv cache: admitted a request that holds blocks or does not fit")
        self.block_list[index] = need
        self.prompt_list[index] = prompt_tokens
        self.free_blocks -= need
        if need:
            self.holders[index] = None

    def needed(self, indices: Sequence[int], chunks: Sequence[int]) -> int:
        """New blocks the batch needs to write `chunks` more slots per request (none within
        what a request holds: an admitted prefill needs none)."""
        tokens, blocks, block = self.token_list, self.block_list, self.block
        return sum(
            [
                max(blocks_for(tokens[i] + c, block) - blocks[i], 0)
                for i, c in zip(indices, chunks, strict=True)
            ]
        )

    def write(self, indices: Sequence[int] | IntArray, chunks: Sequence[int] | IntArray) -> None:
        """Record `chunks` written slots per request; the caller checked the blocks are free."""
        tokens, blocks, block = self.token_list, self.block_list, self.block
        index, chunk = _ints(indices), _ints(chunks)
        grown = 0
        for i, c in zip(index, chunk, strict=True):
            t = tokens[i] + c
            tokens[i] = t
            b = blocks_for(t, block)
            if b > blocks[i]:
                if not blocks[i]:
                    self.holders[i] = None
                grown += b - blocks[i]
                blocks[i] = b
        self.free_blocks -= grown
        if self.free_blocks < 0:
            raise RuntimeError("kv cache overflow: the engine allocated past capacity")

    def release(self, index: int) -> None:
        """Free every block of request `index` (finished or preempted)."""
        self.free_blocks += self.block_list[index]
        self.block_list[index] = 0
        self.holders.pop(index, None)
        self.token_list[index] = 0
        self.prompt_list[index] = 0

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
            return sum([blocks_for(t + k, block) for t in tokens]) - held <= free

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
