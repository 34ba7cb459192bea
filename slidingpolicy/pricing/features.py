"""The seven batch features, the scenario and the price of a batch (eq. 4–6): the one place
they are written.

A batch is a list of chunks (c_i, u_i): c_i tokens of request i run on top of u_i cached ones.
D = {c ≤ 1} are its decodes, P = {c ≥ 2} its prefill chunks (eq. 4), and

    x1 = Σ_P c(u+c), x2 = Σ_P c², x3 = Σ u, x4 = |D|, x5 = Σ_D u, x6 = Σ_P c, x7 = max_P c.

Each formula below is plain arithmetic, so one definition serves Python numbers and numpy
arrays (many batches at once: `chunk_terms`, `PricedQueue.latencies`, the vectorized split):
`prefill_terms` (what a prefill chunk adds), `scenario` (eq. 5), `tile_count` (x8), `linear`
and `chunk_piece` (eq. 6, in the one order of float operations every search compares), and
`dot_rows` (eq. 6 over rows of features, the order the fit and the learner use). The two
innermost calls of the scalar searches, `add_chunk` and `LatencyPredictor.price`, call
`prefill_terms` and `linear`; a property test holds them to the array kernel bit for bit
(tests/pricing/test_kernel.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

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


def scenario(x4: Any, x6: Any) -> Any:
    """DECODE when P is empty, PREFILL when D is empty, MIXED otherwise (eq. 5), from |D| = x4
    and Σ_P c = x6: of numbers, or elementwise of arrays (an empty batch reads DECODE)."""
    return (x6 > 0) * (1 + (x4 > 0))


def scenario_of(num_decode: int, num_prefill: int) -> int:
    """`scenario` of a batch with `num_decode` decodes and `num_prefill` prefill chunks."""
    return int(scenario(num_decode, num_prefill))


def prefill_terms(c: Any, u: Any) -> tuple[Any, Any, Any, Any, Any]:
    """x1, x2, x3, x6, x7 that a prefill chunk of c ≥ 2 tokens on u cached ones adds (eq. 4):
    c(u+c), c², u, c and c (x4, x5 are the decodes')."""
    return c * (u + c), c * c, u, c, c


def linear(w: Any, x1: Any, x2: Any, x3: Any, x4: Any, x5: Any, x6: Any) -> Any:
    """b + w1·x1 + … + w6·x6 (eq. 6 up to the peak term w7·x7), left to right: the one order
    of float operations of every price a search compares. `w` is a row of coefficients
    (intercept first), or 8 arrays of them."""
    return w[0] + w[1] * x1 + w[2] * x2 + w[3] * x3 + w[4] * x4 + w[5] * x5 + w[6] * x6


def chunk_piece(w: Any, x: Any, base: Any, shift: Any) -> tuple[Any, Any, Any]:
    """`linear` of features x (x1..x6) plus one prefill chunk of c tokens on base + shift·c
    cached ones, as constant + slope·c + curve·c²: by eq. 4 the chunk adds x1 += base·c +
    (1 + shift)·c², x2 += c², x3 += base + shift·c and x6 += c."""
    x1, x2, x3, x4, x5, x6 = x
    constant = linear(w, x1, x2, x3 + base, x4, x5, x6)
    return constant, w[1] * base + w[6] + shift * w[3], w[1] * (1 + shift) + w[2]


def dot_rows(rows: FloatArray, features: FloatArray) -> FloatArray:
    """b + w·x of many batches: row i of `rows` the coefficients (intercept first) of batch i,
    row i of `features` its x (eq. 6, summed as numpy's einsum sums: the fit's order)."""
    width = features.shape[1]
    dot: FloatArray = rows[:, 0] + np.einsum("ij,ij->i", rows[:, 1 : 1 + width], features)
    return dot


def add_chunk(terms: Terms, c: int, u: int) -> Terms:
    """x1..x7 after adding one chunk of c tokens on u cached ones to a batch with `terms`
    (eq. 4): a prefill chunk when c ≥ 2, a decode when c = 1."""
    x1, x2, x3, x4, x5, x6, x7 = terms
    if c >= 2:
        a1, a2, a3, a6, a7 = prefill_terms(c, u)
        return x1 + a1, x2 + a2, x3 + a3, x4, x5, x6 + a6, x7 if x7 > a7 else a7
    return x1, x2, x3 + u, x4 + 1, x5 + u, x6, x7


def add_chunks(terms: Terms, chunks: Iterable[tuple[int, int]]) -> Terms:
    """x1..x7 after adding chunks (c, u) to a batch with `terms` (eq. 4, `add_chunk`)."""
    for c, u in chunks:
        terms = add_chunk(terms, c, u)
    return terms


def decode_terms(count: int, context: int) -> Terms:
    """x1..x7 of `count` decodes holding `context` cached tokens in all (eq. 4 with P = ∅)."""
    return 0, 0, context, count, context, 0, 0


def tile_count(tokens: Any, tile: int) -> Any:
    """x8 = ⌈tokens / T⌉: the GEMM tiles of M = `tokens` rows (x4 + x6, every token the batch
    runs); the tile-aware predictor's eighth feature. Of a number, or elementwise of an array."""
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
    single = chunks == 1
    x1, x2, _, x6, x7 = prefill_terms(np.where(chunks >= 2, chunks, 0), contexts)
    return (
        x1,
        x2,
        np.where(chunks > 0, contexts, 0),
        single.astype(np.int64),
        np.where(single, contexts, 0),
        x6,
        x7,
    )
