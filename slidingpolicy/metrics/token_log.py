"""The token log: when each request produced each token, kept as the engine runs."""

from __future__ import annotations

import math
from array import array
from collections.abc import Sequence

import numpy as np

from slidingpolicy.metrics.percentiles import FloatArray, IntArray
from slidingpolicy.records.request import next_token_deadline
from slidingpolicy.workloads import WorkloadColumns


def token_deadline(
    arrival: FloatArray, ttft: FloatArray, tbt: FloatArray, k: IntArray
) -> FloatArray:
    """d_k = a + L_ttft + (k − 1)·L_tbt, elementwise: token k's deadline (eq. 1)."""
    return next_token_deadline(arrival, ttft, tbt, k - 1)


class TokenLog:
    """Per-request token times, updated as the engine produces tokens (mutable, engine-only).

    `record` takes one iteration's tokens; `record_run` takes a decode-only run of iterations at
    once and gives exactly the same columns as recording each iteration in turn. The columns
    are Python lists (`counts`, `first`, `last`, `gap`, `late`, `preempted`; an engine touches a
    handful of requests per iteration), read as arrays through `generated`, `first_token`,
    `last_token`, `max_gap`, `max_lateness` and `preemptions`. `late_count` counts the requests
    with a late token so far (max_lateness > 0). Only the `counted` requests (every one by
    default; a steady-state trial's window, `workloads.steady_state`) add their gaps and
    count towards `late_count` and `given_up_unlate`.
    """

    def __init__(self, columns: WorkloadColumns, counted: range | None = None) -> None:
        n = columns.arrival.size
        self.columns = columns
        self.counted: list[bool] = [counted is None] * n
        """Whether each request is counted."""
        for i in counted or ():
            self.counted[i] = True
        self._arrival: list[float] = columns.arrival.tolist()
        self._ttft: list[float] = columns.ttft.tolist()
        self._tbt: list[float] = columns.tbt.tolist()
        self.counts: list[int] = [0] * n
        self.first: list[float] = [math.nan] * n
        self.last: list[float] = [math.nan] * n
        self.gap: list[float] = [0.0] * n
        self.late: list[float] = [-math.inf] * n
        self.preempted: list[int] = [0] * n
        self.notice: list[float] = [math.nan] * n
        """When each request was given up (NaN: never)."""
        self.late_count = 0
        self.given_up_unlate = 0
        """Requests given up without a late token (those `late_count` does not count)."""
        self._gaps: list[FloatArray] = []
        self._gap_weights: list[int] = []
        self._step_gaps = array("d")
        """The gaps of stepped iterations, 8 bytes each (a long run holds tens of millions)."""

    @property
    def generated(self) -> IntArray:
        """Tokens produced per request."""
        return np.array(self.counts, dtype=np.int64)

    @property
    def first_token(self) -> FloatArray:
        """Time of each request's first token (NaN before it)."""
        return np.array(self.first, dtype=np.float64)

    @property
    def last_token(self) -> FloatArray:
        """Time of each request's latest token (NaN before the first)."""
        return np.array(self.last, dtype=np.float64)

    @property
    def max_gap(self) -> FloatArray:
        """Largest gap between consecutive tokens per request (0 before the second)."""
        return np.array(self.gap, dtype=np.float64)

    @property
    def max_lateness(self) -> FloatArray:
        """Largest (token time − its deadline) per request (−inf before the first token)."""
        return np.array(self.late, dtype=np.float64)

    @property
    def preemptions(self) -> IntArray:
        """Preemptions per request."""
        return np.array(self.preempted, dtype=np.int64)

    def record(self, indices: Sequence[int] | IntArray, now: float) -> None:
        """Requests `indices` each produced their next token at `now`."""
        counts, late, last, counted = self.counts, self.late, self.last, self.counted
        arrival, ttft, tbt = self._arrival, self._ttft, self._tbt
        gaps = self._step_gaps
        for i in indices.tolist() if isinstance(indices, np.ndarray) else indices:
            generated = counts[i]
            k = generated + 1
            counts[i] = k
            lateness = now - next_token_deadline(arrival[i], ttft[i], tbt[i], generated)
            if lateness > late[i]:
                if lateness > 0.0 >= late[i] and counted[i]:
                    self.late_count += 1
                late[i] = lateness
            if k == 1:
                self.first[i] = now
            else:
                gap = now - last[i]
                if counted[i]:
                    gaps.append(gap)
                if gap > self.gap[i]:
                    self.gap[i] = gap
            last[i] = now

    def give_up(self, i: int, now: float) -> None:
        """Request i was given up at `now`: it ends unserved (`slidingpolicy.metrics`)."""
        self.notice[i] = now
        if self.late[i] <= 0.0 and self.counted[i]:
            self.given_up_unlate += 1

    def record_run(self, indices: Sequence[int] | IntArray, times: FloatArray) -> None:
        """Requests `indices`, all decoding, each produced one token at every time in `times`."""
        index = np.asarray(indices, dtype=np.int64)
        listed: list[int] = index.tolist()
        c = self.columns
        steps = np.arange(1, times.size + 1, dtype=np.int64)
        generated = np.array([self.counts[i] for i in listed], dtype=np.int64)
        k = generated[:, None] + steps[None, :]
        deadline = token_deadline(
            c.arrival[index][:, None], c.ttft[index][:, None], c.tbt[index][:, None], k
        )
        lateness = (times[None, :] - deadline).max(axis=1)
        last = np.array([self.last[i] for i in listed], dtype=np.float64)
        first_gaps: FloatArray = times[0] - last
        gap = first_gaps
        counted = self.counted
        kept = [counted[i] for i in listed]
        self._gaps.append(first_gaps[kept])
        self._gap_weights.append(1)
        if times.size > 1:
            steady: FloatArray = times[1:] - times[:-1]
            if any(kept):
                self._gaps.append(steady)
                self._gap_weights.append(sum(kept))
            gap = np.maximum(first_gaps, steady.max())
        end = float(times[-1])
        size = int(times.size)
        counts, late, gaps, lasts = self.counts, self.late, self.gap, self.last
        for i, lateness_i, gap_i in zip(listed, lateness.tolist(), gap.tolist(), strict=True):
            if lateness_i > late[i]:
                if lateness_i > 0.0 >= late[i] and counted[i]:
                    self.late_count += 1
                late[i] = lateness_i
            if gap_i > gaps[i]:
                gaps[i] = gap_i
            counts[i] += size
            lasts[i] = end

    def gaps(self) -> tuple[FloatArray, FloatArray, IntArray]:
        """Every inter-token gap so far: the stepped iterations' (each counted once, a copy
        of the log's), and the decode runs' as values and their counts."""
        plain = np.frombuffer(self._step_gaps, dtype=np.float64).copy()
        if not self._gaps:
            return plain, np.zeros(0), np.zeros(0, dtype=np.int64)
        counts = np.concatenate(
            [
                np.full(g.size, w, dtype=np.int64)
                for g, w in zip(self._gaps, self._gap_weights, strict=True)
            ]
        )
        return plain, np.concatenate(self._gaps), counts
