"""The price of a fill: predicted latency of an iteration that runs part of the prefill queue.

The queue's remaining prompts, laid end to end, form one token stream. An iteration that runs
stream tokens [lo, hi) gives the request holding `lo` a head chunk, every request strictly
inside its whole remainder and the request holding `hi − 1` a tail chunk. For a later
iteration of the window the decodes hold one more cached token per step; requests whose
prefill ended before `lo` are left out (the spec's T̂₂: "decode contexts +1, queue after b
tokens are consumed"), so finishing a prefill now is never priced as a cost later. Prefix
sums over the queue give the seven
features of eq. 4 for any interval in O(1) (`price`), and for many intervals at once in one
vectorized pass (`latencies`, for exhaustive scans).

Between two queue boundaries (a "piece") the chunk of the boundary request grows while every
other feature is fixed, so T̂ is a quadratic in the chunk plus one max term (`Piece`). The
searches of `budget` and `split` work on those closed forms (proofs/monotonicity.md).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence

import attrs
import numpy as np

from slidingpolicy.pricing.features import DECODE, MIXED, PREFILL, FloatArray, IntArray
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
        return self.base + c * (self.slope + self.curve * c) + self.peak_weight * max(self.peak, c)


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


def _peak(remaining: list[int], start: int, stop: int) -> int:
    """max of the whole remainders ≥ 2 in remaining[start:stop] (x7 of those requests), else 0."""
    top = max(remaining[start:stop], default=0)
    return top if top >= 2 else 0


def greedy_fill(remaining: Sequence[int], budget: int) -> list[int]:
    """Chunks of a greedy fill: each request in order takes min(r_i, what is left of budget)."""
    chunks = []
    left = budget
    for r in remaining:
        if left <= 0:
            break
        take = min(r, left)
        chunks.append(take)
        left -= take
    return chunks


class Fill:
    """An ordered prefill queue beside a set of decodes, ready to price any part of its stream.

    Prefix lists (index k covers requests 0..k−1): `cum` Σr, `p1` Σ_P r(u+r), `p2` Σ_P r²,
    `p6` Σ_P r, `pu` Σu, `n1` |{r = 1}|, `u1` Σ_{r=1} u, `peak` max_P r —
    where P are the requests whose whole remainder is ≥ 2 tokens (eq. 4).
    """

    __slots__ = (
        "_arrays",
        "_coef",
        "_prefix",
        "_rows",
        "context",
        "cum",
        "decode_context",
        "n1",
        "num_decode",
        "p1",
        "p2",
        "p6",
        "peak",
        "pu",
        "remaining",
        "total",
        "u1",
    )

    def __init__(
        self,
        predictor: LatencyPredictor,
        decode_contexts: Sequence[int],
        remaining: Sequence[int],
        contexts: Sequence[int],
    ) -> None:
        self._start(
            predictor.coefficients, predictor.rows, len(decode_contexts), sum(decode_contexts)
        )
        self._lay(remaining, contexts)

    def _start(
        self,
        coef: FloatArray,
        rows: tuple[tuple[float, ...], ...],
        num_decode: int,
        decode_context: int,
    ) -> None:
        self._coef = coef
        self._rows = rows
        self._prefix: dict[int, float] = {}
        self._arrays: tuple[dict[str, IntArray], IntArray, IntArray] | None = None
        self.num_decode = num_decode
        self.decode_context = decode_context

    def _lay(self, remaining: Sequence[int], contexts: Sequence[int]) -> None:
        self.remaining = list(remaining)
        self.context = list(contexts)
        cum = p1 = p2 = p6 = pu = n1 = u1 = peak = 0
        self.cum, self.p1, self.p2, self.p6 = [0], [0], [0], [0]
        self.pu, self.n1, self.u1, self.peak = [0], [0], [0], [0]
        for r, u in zip(self.remaining, self.context, strict=True):
            cum += r
            pu += u
            if r >= 2:
                p1 += r * (u + r)
                p2 += r * r
                p6 += r
                peak = max(peak, r)
            else:
                n1 += 1
                u1 += u
            self.cum.append(cum)
            self.p1.append(p1)
            self.p2.append(p2)
            self.p6.append(p6)
            self.pu.append(pu)
            self.n1.append(n1)
            self.u1.append(u1)
            self.peak.append(peak)
        self.total = cum

    def _vectors(self) -> tuple[dict[str, IntArray], IntArray, IntArray]:
        """The prefix lists as arrays, and a sparse table for range maxima (built once)."""
        if self._arrays is None:
            names = ("cum", "p1", "p2", "p6", "pu", "n1", "u1")
            arrays = {name: np.asarray(getattr(self, name), dtype=np.int64) for name in names}
            r = np.asarray(self.remaining, dtype=np.int64)
            context = np.append(np.asarray(self.context, dtype=np.int64), 0)
            self._arrays = (arrays, context, _sparse_max(np.where(r >= 2, r, 0)))
        return self._arrays

    @classmethod
    def of(
        cls,
        predictor: LatencyPredictor,
        decodes: Sequence[Request],
        queue: Sequence[Request],
        reach: int | None = None,
    ) -> Fill:
        """The fill of `queue` (in this order) beside `decodes`.

        With `reach`, only the requests needed to fill `reach` tokens are laid out: no search
        prices a longer fill, and a long queue then costs nothing.
        """
        fill = cls.__new__(cls)
        context = sum(d.context_tokens for d in decodes)
        fill._start(predictor.coefficients, predictor.rows, len(decodes), context)
        fill._lay_queue(queue, reach)
        return fill

    def _lay_queue(self, queue: Sequence[Request], reach: int | None) -> None:
        remaining: list[int] = []
        contexts: list[int] = []
        laid = 0
        for q in queue:
            if reach is not None and laid >= reach:
                break
            remaining.append(q.remaining_prefill)
            contexts.append(q.context_tokens)
            laid += remaining[-1]
        self._lay(remaining, contexts)

    def requeue(self, queue: Sequence[Request]) -> Fill:
        """The fill of another queue beside the same decodes."""
        other = Fill.__new__(Fill)
        other._start(self._coef, self._rows, self.num_decode, self.decode_context)
        other._lay_queue(queue, None)
        return other

    @property
    def pieces(self) -> int:
        """Number of requests in the queue."""
        return len(self.remaining)

    def piece_of(self, b: int) -> int:
        """The k with cum[k] < b ≤ cum[k+1]: the request whose chunk ends the fill of b ≥ 1."""
        return bisect_left(self.cum, b) - 1

    def _dot(
        self,
        scenario: int,
        x1: float,
        x2: float,
        x3: float,
        x4: float,
        x5: float,
        x6: float,
        x7: float,
    ) -> float:
        w = self._rows[scenario]
        return (
            w[0] + w[1] * x1 + w[2] * x2 + w[3] * x3 + w[4] * x4 + w[5] * x5 + w[6] * x6 + w[7] * x7
        )

    def price_whole(self, chosen: Sequence[int]) -> float:
        """T̂ of the decodes plus the whole remainder of each chosen queue index."""
        return self.price_requests([(self.remaining[i], self.context[i]) for i in chosen])

    def price_requests(self, chunks: Sequence[tuple[int, int]]) -> float:
        """T̂ of the decodes plus chunks (c, u) of requests in or outside the queue."""
        context = self.decode_context
        return self._with_chunks(0, 0, context, self.num_decode, context, 0, 0, chunks)

    def _with_chunks(
        self,
        x1: int,
        x2: int,
        x3: int,
        x4: int,
        x5: int,
        x6: int,
        x7: int,
        chunks: Sequence[tuple[int, int]],
    ) -> float:
        """T̂ of a batch with features x1..x7 so far plus `chunks` (c, u) (eq. 4–6): a chunk
        of one token is a decode; an empty batch costs 0."""
        for c, u in chunks:
            x3 += u
            if c >= 2:
                x1 += c * (u + c)
                x2 += c * c
                x6 += c
                x7 = max(x7, c)
            else:
                x4 += 1
                x5 += u
        if x6 > 0:
            return self._dot(MIXED if x4 > 0 else PREFILL, x1, x2, x3, x4, x5, x6, x7)
        return self._dot(DECODE, x1, x2, x3, x4, x5, x6, x7) if x4 > 0 else 0.0

    def price(self, lo: int, hi: int, step: int = 0) -> float:
        """T̂ of the iteration `step` iterations ahead that runs stream tokens [lo, hi).

        Decodes then hold `step` more cached tokens; an iteration with nothing to run costs 0.
        """
        if lo == 0 and step == 0:
            return self.prefix(hi)
        cum, context = self.cum, self.context
        x3 = x5 = self.decode_context + step * self.num_decode
        x4 = self.num_decode
        x1 = x2 = x6 = x7 = 0
        if hi <= lo:
            return self._with_chunks(x1, x2, x3, x4, x5, x6, x7, ())
        a = bisect_right(cum, lo) - 1
        e = bisect_left(cum, hi) - 1
        if a == e:
            return self._with_chunks(
                x1, x2, x3, x4, x5, x6, x7, ((hi - lo, context[a] + lo - cum[a]),)
            )
        s = a + 1
        return self._with_chunks(
            self.p1[e] - self.p1[s],
            self.p2[e] - self.p2[s],
            x3 + self.pu[e] - self.pu[s],
            x4 + self.n1[e] - self.n1[s],
            x5 + self.u1[e] - self.u1[s],
            self.p6[e] - self.p6[s],
            _peak(self.remaining, s, e),
            ((cum[s] - lo, context[a] + lo - cum[a]), (hi - cum[e], context[e])),
        )

    def prefix(self, b: int) -> float:
        """T̂ of the decodes plus a greedy fill of b tokens: the requests before the piece of
        b whole (prefix sums) and its request's chunk (eq. 4–6). Remembered per b: a plan
        asks for the same few fills several times."""
        known = self._prefix.get(b)
        if known is not None:
            return known
        context = self.decode_context
        if b <= 0:
            return self._with_chunks(0, 0, context, self.num_decode, context, 0, 0, ())
        k = bisect_left(self.cum, b) - 1
        price = self._with_chunks(
            self.p1[k],
            self.p2[k],
            context + self.pu[k],
            self.num_decode + self.n1[k],
            context + self.u1[k],
            self.p6[k],
            self.peak[k],
            ((b - self.cum[k], self.context[k]),),
        )
        self._prefix[b] = price
        return price

    def first(self, k: int) -> Piece:
        """T̂ of the fill that ends with a chunk c ≥ 2 of request k, as a function of c."""
        u = self.context[k]
        x4 = self.num_decode + self.n1[k]
        w = self._rows[MIXED if x4 > 0 else PREFILL]
        base = (
            w[0]
            + w[1] * self.p1[k]
            + w[2] * self.p2[k]
            + w[3] * (self.decode_context + self.pu[k] + u)
            + w[4] * x4
            + w[5] * (self.decode_context + self.u1[k])
            + w[6] * self.p6[k]
        )
        return Piece(base, w[1] * u + w[6], w[1] + w[2], w[7], self.peak[k])

    def following(self, k: int, end: int) -> tuple[Piece, int]:
        """T̂ of the next iteration, running [b, end) for b inside piece k, as a function of
        the head chunk h ≥ 2 left of request k; and the h at which b = cum[k]."""
        cum = self.cum
        e = self.piece_of(end)
        u = self.context[k]
        x3 = x5 = float(self.decode_context + self.num_decode)
        x4 = self.num_decode
        x1 = x2 = x6 = x7 = 0
        if k < e:
            whole = self.remaining[k]
            s = k + 1
            tail, tail_u = end - cum[e], self.context[e]
            x1 = self.p1[e] - self.p1[s]
            x2 = self.p2[e] - self.p2[s]
            x3 += self.pu[e] - self.pu[s] + tail_u
            x4 += self.n1[e] - self.n1[s]
            x5 += self.u1[e] - self.u1[s]
            x6 = self.p6[e] - self.p6[s]
            x7 = _peak(self.remaining, s, e)
            if tail >= 2:
                x1 += tail * (tail_u + tail)
                x2 += tail * tail
                x6 += tail
                x7 = max(x7, tail)
            else:
                x4 += 1
                x5 += tail_u
        else:
            whole = end - cum[k]
        w = self._rows[MIXED if x4 > 0 else PREFILL]
        # head chunk h = whole − c with context u + c = u + whole − h: its x1 term is
        # h·(u + whole), x3 gains u + whole − h.
        base = (
            w[0]
            + w[1] * x1
            + w[2] * x2
            + w[3] * (x3 + u + whole)
            + w[4] * x4
            + w[5] * x5
            + w[6] * x6
        )
        return Piece(base, w[1] * (u + whole) + w[6] - w[3], w[2], w[7], x7), whole

    # -- many intervals at once -------------------------------------------------------------

    def latencies(self, lo: IntArray, hi: IntArray, step: IntArray | int = 0) -> FloatArray:
        """`price` of every interval [lo[i], hi[i]) at once (vectorized, for exhaustive scans)."""
        arrays, u, table = self._vectors()
        cum = arrays["cum"]
        n = len(self.remaining)
        a = np.searchsorted(cum, lo, side="right") - 1
        e = np.searchsorted(cum, hi, side="left") - 1
        nonempty = hi > lo
        single = nonempty & (a == e)
        multi = nonempty & (a < e)
        head = np.minimum(a, n - 1)
        tail = np.maximum(e, 0)
        head_c = np.where(single, hi - lo, np.where(multi, cum[head + 1] - lo, 0))
        head_u = u[head] + lo - cum[head]
        tail_c = np.where(multi, hi - cum[tail], 0)
        tail_u = u[tail]
        start = np.where(multi, head + 1, 0)
        stop = np.where(multi, tail, 0)

        def span(name: str) -> IntArray:
            prefix: IntArray = arrays[name]
            return prefix[stop] - prefix[start]

        length = stop - start
        level = np.zeros_like(length)
        level[length > 0] = np.log2(length[length > 0]).astype(np.int64)
        inner_peak = np.maximum(
            table[level, start], table[level, np.maximum(stop - (1 << level), 0)]
        )
        head_d, tail_d = head_c == 1, tail_c == 1
        hp = np.where(head_c >= 2, head_c, 0)
        tp = np.where(tail_c >= 2, tail_c, 0)
        old = self.decode_context + step * self.num_decode
        x = np.empty((np.size(lo), 7))
        x[:, 0] = hp * (head_u + hp) + tp * (tail_u + tp) + span("p1")
        x[:, 1] = hp * hp + tp * tp + span("p2")
        x[:, 2] = (
            old + np.where(head_c > 0, head_u, 0) + np.where(tail_c > 0, tail_u, 0) + span("pu")
        )
        x[:, 3] = self.num_decode + head_d + tail_d + span("n1")
        x[:, 4] = old + np.where(head_d, head_u, 0) + np.where(tail_d, tail_u, 0) + span("u1")
        x[:, 5] = hp + tp + span("p6")
        x[:, 6] = np.maximum(np.maximum(hp, tp), np.where(length > 0, inner_peak, 0))
        has_p, has_d = x[:, 5] > 0, x[:, 3] > 0
        coef = self._coef[np.where(has_p, np.where(has_d, MIXED, PREFILL), DECODE)]
        latency = coef[:, 0] + np.einsum("ij,ij->i", coef[:, 1:], x)
        return np.where(has_p | has_d, latency, 0.0)

    def prefix_latencies(self, limit: int) -> FloatArray:
        """T̂ of this iteration with b = 0..limit prefill tokens (b capped at the queue)."""
        hi = np.minimum(np.arange(limit + 1, dtype=np.int64), self.total)
        return self.latencies(np.zeros_like(hi), hi)
