"""The seven batch features and the scenario of a batch (eq. 4–5): the one place they are written.

A batch is a list of chunks (c_i, u_i): c_i tokens of request i run on top of u_i cached ones.
D = {c ≤ 1} are its decodes, P = {c ≥ 2} its prefill chunks (eq. 4), and

    x1 = Σ_P c(u+c), x2 = Σ_P c², x3 = Σ u, x4 = |D|, x5 = Σ_D u, x6 = Σ_P c, x7 = max_P c.

Every price in the library is a linear model over these (eq. 6), reached through one of three
views of the same sums: `add_chunk` (scalars, chunk by chunk), `chunk_terms` (arrays of
chunks at once, for exhaustive scans), and the polynomial in one chunk's size that
`queue.PricedQueue` prices in closed form.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from numpy.typing import NDArray

DECODE, PREFILL, MIXED = 0, 1, 2
SCENARIOS = ("decode", "prefill", "mixed")
NUM_FEATURES = 7

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

Terms = tuple[int, int, int, int, int, int, int]
"""x1..x7 of a batch, as exact integers."""

EMPTY: Terms = (0, 0, 0, 0, 0, 0, 0)


def scenario_of(num_decode: int, num_prefill: int) -> int:
    """Pure decode when P is empty, pure prefill when D is empty, mixed otherwise (eq. 5)."""
    if num_prefill == 0:
        return DECODE
    return PREFILL if num_decode == 0 else MIXED


def add_chunk(terms: Terms, c: int, u: int) -> Terms:
    """x1..x7 after adding one chunk of c tokens on u cached ones to a batch with `terms`
    (eq. 4): a prefill chunk when c ≥ 2, a decode when c = 1."""
    x1, x2, x3, x4, x5, x6, x7 = terms
    if c >= 2:
        return x1 + c * (u + c), x2 + c * c, x3 + u, x4, x5, x6 + c, x7 if x7 > c else c
    return x1, x2, x3 + u, x4 + 1, x5 + u, x6, x7


def add_chunks(terms: Terms, chunks: Iterable[tuple[int, int]]) -> Terms:
    """x1..x7 after adding chunks (c, u) to a batch with `terms` (eq. 4, `add_chunk`)."""
    for c, u in chunks:
        terms = add_chunk(terms, c, u)
    return terms


def decode_terms(count: int, context: int) -> Terms:
    """x1..x7 of `count` decodes holding `context` cached tokens in all (eq. 4 with P = ∅)."""
    return 0, 0, context, count, context, 0, 0


def tile_count(tokens: int, tile: int) -> int:
    """x8 = ⌈tokens / T⌉: the GEMM tiles of M = `tokens` rows (x4 + x6, every token the batch
    runs); the tile-aware predictor's eighth feature."""
    return -(-tokens // tile)


def batch_features(
    chunks: IntArray, contexts: IntArray, tile: int | None = None
) -> tuple[FloatArray, int]:
    """x1..x7 of a batch of (c_i, u_i) (eq. 4), and x8 with a `tile`, as floats, and its
    scenario (eq. 5)."""
    pairs = zip(np.asarray(chunks).tolist(), np.asarray(contexts).tolist(), strict=True)
    x = add_chunks(EMPTY, pairs)
    features = x if tile is None else (*x, tile_count(x[3] + x[5], tile))
    return np.array(features, dtype=np.float64), scenario_of(x[3], x[5])


def chunk_terms(
    chunks: IntArray, contexts: IntArray
) -> tuple[IntArray, IntArray, IntArray, IntArray, IntArray, IntArray, IntArray]:
    """x1..x7 that one chunk (c, u) adds, for arrays of chunks (eq. 4; c = 0 adds nothing)."""
    prefill = chunks >= 2
    single = chunks == 1
    c = np.where(prefill, chunks, 0)
    present = chunks > 0
    return (
        c * (contexts + c),
        c * c,
        np.where(present, contexts, 0),
        single.astype(np.int64),
        np.where(single, contexts, 0),
        c,
        c,
    )
