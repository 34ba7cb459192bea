"""The priced prefill queue: the predicted latency of an iteration that runs part of the queue.

The queue's remaining prompts, laid end to end, form one token stream. An iteration that runs
stream tokens [lo, hi) gives the request holding `lo` a head chunk, every request strictly
inside its whole remainder and the request holding `hi − 1` a tail chunk. For a later
iteration of the window the decodes hold one more cached token per step; requests whose
prefill ended before `lo` are left out (T̂₂ of eq. 9: decode contexts +1, the queue after the b
tokens this iteration consumes), so finishing a prefill now is never priced as a cost later. Prefix
sums of the features of eq. 4 (`features.add_chunks`) over the queue price any interval in
O(1) (`price`), and many intervals at once in one vectorized pass (`latencies`).

Between two queue boundaries the chunk of the boundary request grows while every other
feature is fixed, so T̂ is a quadratic in the chunk plus one max term (`Piece`). The searches
of `budget` and `split` work on those closed forms (proofs/monotonicity.md).
"""

from __future__ import annotations

import functools
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from itertools import accumulate

import attrs
import numpy as np

from slidingpolicy import _arguments, _validate
from slidingpolicy.pricing.features import (
    FloatArray,
    IntArray,
    Terms,
    add_chunk,
    add_chunks,
    chunk_piece,
    chunk_terms,
    decode_terms,
    dot_rows,
    scenario,
    tile_count,
)
from slidingpolicy.pricing.model import LatencyPredictor
from slidingpolicy.records.request import Request


@attrs.frozen(slots=True)
class Piece:
    """T̂(c) = base + slope·c + curve·c² + peak_weight·max(peak, c) for chunks c ≥ 2."""

    base: float
    slope: float
    curve: float
    peak_weight: float
    peak: int

    def __call__(self, c: int) -> float:
        top = c if c > self.peak else self.peak
        return self.base + c * (self.slope + self.curve * c) + self.peak_weight * top

    def smooth(self) -> Piece:
        """The piece without a tile step: itself."""
        return self


@attrs.frozen(slots=True)
class TiledPiece(Piece):
    """A `Piece` of a tile-aware predictor: plus tile_weight·⌈(tile_base + c)/tile⌉, a step
    non-decreasing in c (`features.tile_count`)."""

    tile_weight: float
    tile: int
    tile_base: int

    def __call__(self, c: int) -> float:
        tiles: int = tile_count(self.tile_base + c, self.tile)
        step = self.tile_weight * tiles
        return Piece.__call__(self, c) + step

    def smooth(self) -> Piece:
        """The piece without its tile step (what is convex between two tile edges)."""
        return Piece(self.base, self.slope, self.curve, self.peak_weight, self.peak)


def head(stream: Iterable[Request], reach: int | None) -> list[Request]:
    """The requests of `stream` up to the first that brings their remaining tokens to `reach`
    (all with None): what `PricedQueue.of` lays out, and so all a fill of `reach` reads."""
    if reach is None:
        return list(stream)
    taken: list[Request] = []
    laid = 0
    for request in stream:
        if laid >= reach:
            break
        taken.append(request)
        laid += request.remaining_prefill
    return taken


def _sparse_max(values: IntArray) -> IntArray:
    """Sparse table: row k holds max(values[i : i + 2**k]) (0 past the end)."""
    rows = [np.append(values, 0)]
    width = 1
    while 2 * width <= values.size:
        prev = rows[-1]
        row = prev.copy()
        row[: prev.size - width] = np.maximum(prev[: prev.size - width], prev[width:])
        rows.append(row)
        width *= 2
    return np.vstack(rows)


@attrs.frozen(slots=True)
class Columns:
    """A `PricedQueue` as arrays: `wholes[j][k]` is feature x_{j+1} of `PricedQueue.wholes[k]`."""

    wholes: tuple[IntArray, ...]
    starts: IntArray
    remaining: IntArray
    contexts: IntArray


@attrs.define(slots=True, eq=False, weakref_slot=False)
class PricedQueue:
    """An ordered prefill queue beside a set of decodes, ready to price any part of its stream.

    `starts[k]` is the stream offset of request k (`starts[count]` = `total`); `wholes[k]` the
    features (eq. 4) of the decodes plus the whole remainders of requests 0..k−1.

    Not a record but the pricing table of one plan, built for it and dropped with it: it keeps
    what the plan's searches ask for more than once (`prefix`'s prices, `budget.fill_budget`'s
    answers, the queue as arrays) in its own memo tables. Its queue fields are never
    reassigned.
    """

    predictor: LatencyPredictor
    decodes: int
    """|D|: the decodes that run with every prefill chunk."""
    decode_context: int
    """Σ_D u: the cached tokens of those decodes."""
    remaining: tuple[int, ...]
    contexts: tuple[int, ...]
    starts: tuple[int, ...]
    wholes: tuple[Terms, ...]
    _prices: dict[int, float] = attrs.field(factory=dict, init=False, repr=False)
    """Prices of greedy fills already asked for (`prefix`): a plan asks for a few, often."""
    budgets: dict[tuple[float, int], int] = attrs.field(factory=dict, init=False, repr=False)
    """TimeToBudget answers already found, by (target, limit) (`budget.fill_budget`): the
    chunker asks for B* = TimeToBudget(T_cur) and its split again for its bound."""

    @classmethod
    def of_lengths(
        cls,
        predictor: LatencyPredictor,
        decode_contexts: Sequence[int],
        remaining: Sequence[int],
        contexts: Sequence[int],
    ) -> PricedQueue:
        """The queue of remainders r_i on u_i cached tokens, in order, beside these decodes."""
        _validate.instance("priced queue", "predictor", predictor, LatencyPredictor)
        remaining, contexts = tuple(remaining), tuple(contexts)
        starts = tuple(accumulate(remaining, initial=0))
        decodes, decode_context = len(decode_contexts), sum(decode_contexts)
        terms = decode_terms(decodes, decode_context)
        wholes = [terms]
        for r, u in zip(remaining, contexts, strict=True):
            terms = add_chunk(terms, r, u)
            wholes.append(terms)
        return cls(
            predictor,
            decodes,
            decode_context,
            remaining,
            contexts,
            starts,
            tuple(wholes),
        )

    @classmethod
    def of(
        cls,
        predictor: LatencyPredictor,
        decodes: Sequence[Request],
        queue: Sequence[Request],
        reach: int | None = None,
    ) -> PricedQueue:
        """The priced `queue` (in this order) beside `decodes`.

        With `reach`, only the requests needed to fill `reach` tokens are laid out: no search
        prices a longer fill, and a long queue then costs nothing.
        """
        try:
            laid = head(queue, reach)
            remaining = [q.remaining_prefill for q in laid]
            contexts = [q.context_tokens for q in laid]
            decode_contexts = [d.context_tokens for d in decodes]
        except AttributeError:
            _arguments.requests("priced queue", "queue", queue)
            _arguments.requests("priced queue", "decodes", decodes)
            raise
        return cls.of_lengths(predictor, decode_contexts, remaining, contexts)

    @property
    def count(self) -> int:
        """Number of requests in the queue."""
        return len(self.remaining)

    @property
    def total(self) -> int:
        """Tokens in the whole stream."""
        return self.starts[-1]

    def request_at(self, b: int) -> int:
        """The k with starts[k] < b ≤ starts[k+1]: the request whose chunk ends a fill of b ≥ 1."""
        return bisect_left(self.starts, b) - 1

    def _decodes(self, step: int) -> Terms:
        """The decodes alone, `step` iterations ahead."""
        return decode_terms(self.decodes, self.decode_context + step * self.decodes)

    def _span(self, s: int, e: int, step: int) -> Terms:
        """The decodes `step` iterations ahead plus the whole remainders of requests s..e−1."""
        a, z = self.wholes[s], self.wholes[e]
        decode_context = self.decode_context + step * self.decodes
        peak = max(self.remaining[s:e], default=0)
        return (
            z[0] - a[0],
            z[1] - a[1],
            decode_context + z[2] - a[2],
            self.decodes + z[3] - a[3],
            decode_context + z[4] - a[4],
            z[5] - a[5],
            peak if peak >= 2 else 0,
        )

    def price(self, lo: int, hi: int, step: int = 0) -> float:
        """T̂ of the iteration `step` iterations ahead that runs stream tokens [lo, hi).

        Decodes then hold `step` more cached tokens; an iteration with nothing to run costs 0.
        """
        if lo == 0 and step == 0:
            return self.prefix(hi)
        starts, contexts = self.starts, self.contexts
        if hi <= lo:
            return self.predictor.price(self._decodes(step))
        a = bisect_right(starts, lo) - 1
        e = bisect_left(starts, hi) - 1
        head_context = contexts[a] + lo - starts[a]
        if a == e:
            return self.predictor.price(add_chunk(self._decodes(step), hi - lo, head_context))
        terms = add_chunk(self._span(a + 1, e, step), starts[a + 1] - lo, head_context)
        return self.predictor.price(add_chunk(terms, hi - starts[e], contexts[e]))

    def whole(self, chunks: Sequence[tuple[int, int]]) -> float:
        """T̂ of the decodes plus chunks (c, u) of requests in or outside the queue."""
        return self.predictor.price(add_chunks(self._decodes(0), chunks))

    def prefix(self, b: int) -> float:
        """T̂ of the decodes plus a greedy fill of b tokens: the requests before the one holding
        token b whole (prefix sums) and that request's chunk (eq. 4–6)."""
        known = self._prices.get(b)
        if known is not None:
            return known
        if b <= 0:
            price = self.predictor.price(self.wholes[0])
        else:
            k = bisect_left(self.starts, b) - 1
            chunk = b - self.starts[k]
            price = self.predictor.price(add_chunk(self.wholes[k], chunk, self.contexts[k]))
        self._prices[b] = price
        return price

    def _piece(self, terms: Terms, base: int, shift: int) -> Piece:
        """T̂ of `terms` plus one chunk c ≥ 2 on base + shift·c cached tokens, as a function
        of c (`features.chunk_piece`; x7 ≥ c; shift is 0 or −1)."""
        x1, x2, x3, x4, x5, x6, x7 = terms
        w = self.predictor.by_presence[True][x4 > 0]
        assert w is not None  # a prefill chunk is present
        constant, slope, curve = chunk_piece(w, (x1, x2, x3, x4, x5, x6), base, shift)
        tile = self.predictor.tile
        if tile is None:
            return Piece(constant, slope, curve, w[7], x7)
        return TiledPiece(constant, slope, curve, w[7], x7, w[8], tile, x4 + x6)

    def closing_chunk(self, k: int) -> Piece:
        """T̂ of the greedy fill that ends with a chunk c ≥ 2 of request k, as a function of c."""
        return self._piece(self.wholes[k], self.contexts[k], 0)

    def next_head(self, k: int, end: int) -> tuple[Piece, int, Terms]:
        """T̂ of the next iteration, running [b, end) for b inside request k, as a function of
        the head chunk h ≥ 2 left of request k; the h at which b = starts[k]; and the features
        of that iteration without its head chunk (the decodes a step on, requests k+1..e−1
        whole and e's chunk), for `head_price`."""
        e = self.request_at(end)
        if k < e:
            whole = self.remaining[k]
            rest = add_chunk(self._span(k + 1, e, 1), end - self.starts[e], self.contexts[e])
        else:
            whole = end - self.starts[k]
            rest = self._decodes(1)
        # The head chunk h = whole − c holds context u + c = u + whole − h.
        return self._piece(rest, self.contexts[k] + whole, -1), whole, rest

    def head_price(self, rest: Terms, k: int, whole: int, h: int) -> float:
        """`price(b, end, 1)` for the b that leaves h ≥ 0 tokens of request k to the next
        iteration, from `next_head`'s `whole` and `rest`: the same features, so the same float,
        without locating the interval again."""
        if h == 0:
            return self.predictor.price(rest)
        return self.predictor.price(add_chunk(rest, h, self.contexts[k] + whole - h))

    @functools.cached_property
    def columns(self) -> Columns:
        """The queue as int64 arrays, for the vectorized searches."""
        wholes = np.asarray(self.wholes, dtype=np.int64).reshape(-1, 7)
        return Columns(
            tuple(wholes.T),
            np.asarray(self.starts, dtype=np.int64),
            np.asarray(self.remaining, dtype=np.int64),
            np.asarray(self.contexts, dtype=np.int64),
        )

    @functools.cached_property
    def _arrays(self) -> tuple[tuple[IntArray, ...], IntArray, IntArray, IntArray]:
        """The prefix sums as arrays, the contexts, and a sparse table for range maxima."""
        columns = self.columns
        r = columns.remaining
        contexts = np.append(columns.contexts, 0)
        return columns.wholes, columns.starts, contexts, _sparse_max(np.where(r >= 2, r, 0))

    def latencies(self, lo: IntArray, hi: IntArray, step: IntArray | int = 0) -> FloatArray:
        """`price` of every interval [lo[i], hi[i]) at once (vectorized, for exhaustive scans)."""
        wholes, starts, u, table = self._arrays
        n = self.count
        a = np.searchsorted(starts, lo, side="right") - 1
        e = np.searchsorted(starts, hi, side="left") - 1
        nonempty = hi > lo
        single = nonempty & (a == e)
        multi = nonempty & (a < e)
        head = np.minimum(a, n - 1)
        tail = np.maximum(e, 0)
        head_c = np.where(single, hi - lo, np.where(multi, starts[head + 1] - lo, 0))
        tail_c = np.where(multi, hi - starts[tail], 0)
        start = np.where(multi, head + 1, 0)
        stop = np.where(multi, tail, 0)
        length = stop - start
        level = np.zeros_like(length)
        level[length > 0] = np.log2(length[length > 0]).astype(np.int64)
        inner_peak = np.maximum(
            table[level, start], table[level, np.maximum(stop - (1 << level), 0)]
        )
        old = self.decode_context + step * self.decodes
        h = chunk_terms(head_c, u[head] + lo - starts[head])
        t = chunk_terms(tail_c, u[tail])
        x = np.empty((np.size(lo), 7))
        for j in range(6):
            x[:, j] = h[j] + t[j] + wholes[j][stop] - wholes[j][start]
        x[:, 2] += old
        x[:, 3] += self.decodes
        x[:, 4] += old
        x[:, 6] = np.maximum(np.maximum(h[6], t[6]), np.where(length > 0, inner_peak, 0))
        coef = self.predictor.coefficients[scenario(x[:, 3], x[:, 5])]
        latency = dot_rows(coef, x)
        tile = self.predictor.tile
        if tile is not None:
            latency = latency + coef[:, 8] * tile_count(x[:, 3] + x[:, 5], tile)
        return np.where((x[:, 5] > 0) | (x[:, 3] > 0), latency, 0.0)

    def prefix_latencies(self, limit: int) -> FloatArray:
        """T̂ of this iteration with b = 0..limit prefill tokens (b capped at the queue)."""
        hi = np.minimum(np.arange(limit + 1, dtype=np.int64), self.total)
        return self.latencies(np.zeros_like(hi), hi)
