"""The trace bound: on one workload, known in full (arrivals, lengths, SLOs), the most requests
that any schedule — clairvoyant or not — can serve with every token on time (eq. 1).

A necessary condition on every interval of time [s, e]: the requests that arrive at or after s
have work due by e (`demand`, for the tokens whose deadlines are ≤ e), all of it done by
iterations inside [s, e]. Those iterations number at least K (`pacing`) and do at least the
interval's tokens T and entries R, so they take at least min over K' ≥ K of
K'·G(T/K') + K'·H(R/K') (Jensen, on the convex envelopes), plus the attention the work
needs; all of it must fit in e − s. With m requests allowed to miss, each interval drops the
m largest contributions of each column, and K must survive any m misses.

The intervals checked: from the first arrival to a few ends (K from request-disjoint chains of
windows), and windows of several lengths starting at arrivals (K from the (m + 1)-th longest
single window). Checking fewer intervals only weakens the bound; it stays a bound.
"""

from __future__ import annotations

import attrs
import numpy as np
from numpy.typing import NDArray

from slidingpolicy.bound.cost import IterationCost
from slidingpolicy.bound.demand import COLUMNS, demand
from slidingpolicy.bound.pacing import chain_weights
from slidingpolicy.workloads import Workload, WorkloadColumns

FloatArray = NDArray[np.float64]

MOST_MISSES = 64
"""The most misses the bound resolves; past them it says only "more than this"."""
PREFIX_ENDS = 8
"""Ends of the intervals from the first arrival (quantiles of the last tokens' deadlines)."""
STARTS = 200
"""Arrivals that start windows (evenly spread over the trace)."""
LENGTHS = 12
"""Window lengths (geometric, from the shortest TTFT to the whole span)."""
CHUNK = 64
"""Intervals evaluated at once (memory: CHUNK × requests × columns floats)."""
EARLY = 1e-9
"""Seconds by which a deadline must precede an interval's end to count, so that float
rounding never adds a token that is not due."""

TOKENS, ENTRIES, PREFILL, COMPUTE, MEMORY = range(5)


@attrs.frozen(slots=True)
class TraceBound:
    """At most `served` of the trace's requests can attain; `interval` is where one more
    would not fit (None when all can)."""

    served: int
    requests: int
    interval: tuple[float, float] | None

    @property
    def attainment(self) -> float:
        """The largest attainment any schedule can reach on this trace."""
        return self.served / self.requests


@attrs.frozen(slots=True)
class Intervals:
    """The intervals checked and, per interval, what the drops need."""

    starts: FloatArray
    ends: FloatArray
    totals: FloatArray
    """Each column summed over the interval's requests."""
    largest: FloatArray
    """Per column, the sums of the interval's 0, 1, 2, … largest contributions."""
    windows: FloatArray
    """The interval's requests' due tokens, largest first (0 past the last)."""
    chains: tuple[tuple[float, ...], ...]
    """The weights of successive request-disjoint chains (empty: not a whole-run interval)."""

    def iterations(self, misses: int) -> FloatArray:
        """The iterations each interval needs at least, whichever `misses` requests miss."""
        count = self.windows[:, misses].copy()
        for i, weights in enumerate(self.chains):
            if len(weights) > misses:
                count[i] = max(count[i], min(weights[: misses + 1]))
        return count


def trace_bound(workload: Workload, cost: IterationCost) -> TraceBound:
    """The bound (module docstring): the fewest misses every interval allows (more than
    `MOST_MISSES`: `served` is then n − MOST_MISSES − 1, still a bound)."""
    intervals = _intervals(workload, cost, MOST_MISSES)
    n = len(workload)
    most = min(n, MOST_MISSES)
    low, high = 0, most + 1
    while low < high:
        mid = (low + high) // 2
        if mid <= most and _failing(intervals, cost, mid) is None:
            high = mid
        else:
            low = mid + 1
    stop = None if low == 0 else _failing(intervals, cost, min(low - 1, most))
    return TraceBound(n - low, n, stop)


def attainable(workload: Workload, cost: IterationCost, misses: int) -> bool:
    """Whether a schedule might serve all but `misses` requests on time."""
    if misses >= len(workload):
        return True
    return _failing(_intervals(workload, cost, misses), cost, misses) is None


def _failing(intervals: Intervals, cost: IterationCost, misses: int) -> tuple[float, float] | None:
    """The first interval whose due work cannot fit when `misses` requests miss, or None."""
    work = intervals.totals - intervals.largest[:, misses, :]
    needed = least_time(cost, work, intervals.iterations(misses))
    late = np.flatnonzero(needed > intervals.ends - intervals.starts)
    if late.size == 0:
        return None
    return float(intervals.starts[late[0]]), float(intervals.ends[late[0]])


def least_time(cost: IterationCost, work: FloatArray, iterations: FloatArray) -> FloatArray:
    """The least time of at least `iterations` iterations doing `work` (`demand.COLUMNS`,
    summed; one row each): min over K of K·G(T/K) + K·H(R/K), convex and piecewise linear in
    K, so least at an end or where T/K or R/K is a breakpoint; plus the attention."""
    some = work[:, ENTRIES] > 0.0
    tokens = np.maximum(work[:, TOKENS], 1.0)
    entries = np.maximum(work[:, ENTRIES], 1.0)
    low = np.maximum.reduce(
        [
            iterations,
            tokens / cost.max_tokens,
            entries / float(cost.entries.points[-1]),
            np.ones_like(tokens),
        ]
    )
    high = np.maximum(entries, low)
    candidates = np.concatenate(
        [
            low[:, None],
            high[:, None],
            tokens[:, None] / cost.tokens.points[None, :],
            entries[:, None] / cost.entries.points[None, :],
        ],
        axis=1,
    )
    k = np.clip(candidates, low[:, None], high[:, None])
    seconds = cost.tokens.perspective(tokens[:, None] + 0.0 * k, k)
    seconds = seconds + cost.entries.perspective(entries[:, None] + 0.0 * k, k)
    attention = work[:, PREFILL] + np.maximum(work[:, COMPUTE], work[:, MEMORY])
    time: FloatArray = np.where(some, seconds.min(axis=1) + attention, 0.0)
    return time


def due_tokens(c: WorkloadColumns, ends: FloatArray) -> FloatArray:
    """How many tokens of each request are due by each end (eq. 1): a row per end."""
    since = ends[:, None] - EARLY - c.arrival[None, :] - c.ttft[None, :]
    due = np.floor(since / c.tbt[None, :]) + 1.0
    clipped: FloatArray = np.clip(due, 0.0, c.output[None, :].astype(np.float64))
    return clipped


def _intervals(workload: Workload, cost: IterationCost, most: int) -> Intervals:
    """The intervals (module docstring) of `workload` and their work, for up to `most`
    misses."""
    c = workload.columns()
    last = c.arrival + c.ttft + (c.output - 1.0) * c.tbt
    first = float(c.arrival[0])
    prefix = np.unique(np.quantile(last, np.linspace(0.3, 1.0, PREFIX_ENDS)))
    picks = np.unique(np.linspace(0, c.arrival.size - 1, min(STARTS, c.arrival.size)).astype(int))
    shortest = float(c.ttft.min())
    lengths = np.geomspace(shortest, max(float(last.max()) - first, shortest), LENGTHS)
    opens = np.repeat(c.arrival[picks], lengths.size)
    starts = np.concatenate([np.full(prefix.size, first), opens])
    ends = np.concatenate([prefix, (c.arrival[picks][:, None] + lengths[None, :]).ravel()])
    keep = min(most, len(workload)) + 1
    totals, largest, windows = [], [], []
    for lo in range(0, starts.size, CHUNK):
        s, e = starts[lo : lo + CHUNK], ends[lo : lo + CHUNK]
        due = due_tokens(c, e) * (c.arrival[None, :] >= s[:, None])
        work = demand(cost, c.prompt[None, :].astype(np.float64), due, c.ttft[None, :])
        ordered = -np.sort(-work, axis=1)[:, : keep - 1, :]
        zero = np.zeros((s.size, 1, len(COLUMNS)))
        totals.append(work.sum(axis=1))
        largest.append(_padded(np.concatenate([zero, np.cumsum(ordered, axis=1)], axis=1), keep))
        windows.append(_padded(-np.sort(-due, axis=1)[:, :keep], keep, fill=0.0))
    chains = tuple(_chains(c, float(e), keep) for e in prefix.tolist()) + ((),) * opens.size
    return Intervals(
        starts,
        ends,
        np.concatenate(totals),
        np.concatenate(largest),
        np.concatenate(windows),
        chains,
    )


def _padded(values: FloatArray, size: int, fill: float | None = None) -> FloatArray:
    """`values` extended along axis 1 to `size` entries: by `fill`, or by its last entry."""
    missing = size - values.shape[1]
    if missing <= 0:
        return values
    tail = values[:, -1:] if fill is None else np.full_like(values[:, -1:], fill)
    padded: FloatArray = np.concatenate([values, np.repeat(tail, missing, axis=1)], axis=1)
    return padded


def _chains(c: WorkloadColumns, end: float, count: int) -> tuple[float, ...]:
    """The weights of up to `count` request-disjoint chains of the windows due by `end`."""
    due = due_tokens(c, np.array([end]))[0]
    closes = c.arrival + c.ttft + np.maximum(due - 1.0, 0.0) * c.tbt
    return tuple(chain_weights(c.arrival, closes, due, count))
