"""The trace bound: on one workload, known in full (arrivals, lengths, SLOs), the most requests
that any schedule — clairvoyant or not — can serve with every token on time (eq. 1).

A necessary condition on an interval of time [s, e]: the requests that arrive at or after s
have work due by e (`demand`, for the tokens whose deadlines are ≤ e), all of it done by
iterations inside [s, e]. Those iterations number at least K (`pacing`) and do at least the
interval's tokens T and entries R, so they take at least min over K' ≥ K of
K'·G(T/K') + K'·H(R/K') (Jensen, on the convex envelopes), plus the attention the work needs;
all of it must fit in e − s. If k of the interval's requests miss, the rest still need the
interval's work less its k largest contributions in each column, and K survives any k misses:
the least k for which the interval fits is a number of its requests that must miss.

Intervals that do not overlap have no request in common (one arriving at or after s₂ ≥ e₁
has nothing due by e₁), so a run misses at least the largest total of the least misses over
a set of disjoint intervals (weighted interval scheduling): Poisson bursts that each force a
miss add up, against the 1% a capacity trial allows.

The intervals checked: from the first arrival to a few ends (K also from request-disjoint
chains of windows), and windows of several lengths from each arrival (K from the longest
single windows). Checking fewer intervals only weakens the bound; it stays a bound.
"""

from __future__ import annotations

import attrs
import numpy as np
from numpy.typing import NDArray

from slidingpolicy.bound.cost import IterationCost
from slidingpolicy.bound.demand import COLUMNS, demand
from slidingpolicy.bound.pacing import chain_weights, heaviest_chain
from slidingpolicy.workloads import Workload, WorkloadColumns

FloatArray = NDArray[np.float64]

MOST_MISSES = 64
"""The most misses an interval is resolved to; past them it counts as MOST_MISSES + 1."""
PREFIX_ENDS = 8
"""Ends of the intervals from the first arrival (quantiles of the last tokens' deadlines)."""
LENGTHS = 12
"""Window lengths from each arrival (geometric, from half the shortest TTFT to the span)."""
CHUNK = 64
"""Intervals evaluated at once (memory: CHUNK × requests × columns floats)."""
EARLY = 1e-9
"""Seconds by which a deadline must precede an interval's end to count, so that float
rounding never adds a token that is not due."""

TOKENS, ENTRIES, PREFILL, COMPUTE, MEMORY = range(5)


@attrs.frozen(slots=True)
class TraceBound:
    """At least `requests − served` requests miss, as the disjoint `intervals` (start, end,
    least misses) force; none can, when empty."""

    served: int
    requests: int
    intervals: tuple[tuple[float, float, int], ...]

    @property
    def attainment(self) -> float:
        """The largest attainment any schedule can reach on this trace."""
        return self.served / self.requests


@attrs.frozen(slots=True)
class Intervals:
    """The intervals checked and, per interval, what its misses change."""

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

    def iterations(self, misses: NDArray[np.int64]) -> FloatArray:
        """The iterations each interval needs at least, whichever `misses` (one number per
        interval) of its requests miss."""
        rows = np.arange(self.starts.size)
        count = self.windows[rows, misses].copy()
        for i, weights in enumerate(self.chains):
            if len(weights) > misses[i]:
                count[i] = max(count[i], min(weights[: misses[i] + 1]))
        return count

    def fits(self, cost: IterationCost, misses: NDArray[np.int64]) -> NDArray[np.bool_]:
        """Whether each interval's work fits when `misses` (one per interval) of its
        requests miss."""
        rows = np.arange(self.starts.size)
        work = self.totals - self.largest[rows, misses, :]
        room = self.ends - self.starts
        fitting: NDArray[np.bool_] = least_time(cost, work, self.iterations(misses)) <= room
        return fitting

    def least_misses(self, cost: IterationCost) -> NDArray[np.int64]:
        """Per interval, the fewest of its requests that must miss for the rest to fit (the
        most resolved, plus one, when even that many do not do): a bisection, since more
        misses only remove work and iterations."""
        most = self.largest.shape[1] - 1
        low = np.zeros(self.starts.size, dtype=np.int64)
        high = np.full(self.starts.size, most + 1, dtype=np.int64)
        while np.any(low < high):
            mid = (low + high) // 2
            fitting = self.fits(cost, np.minimum(mid, most)) & (mid <= most)
            high = np.where(fitting & (low < high), mid, high)
            low = np.where(~fitting & (low < high), mid + 1, low)
        return low


def trace_bound(workload: Workload, cost: IterationCost, most: int = MOST_MISSES) -> TraceBound:
    """The bound (module docstring): the most misses disjoint intervals force, each interval
    resolved up to `most`."""
    intervals = _intervals(workload, cost, most)
    least = intervals.least_misses(cost)
    chosen, forced = heaviest_chain(intervals.starts, intervals.ends, least.astype(np.float64))
    spans = sorted(
        (float(intervals.starts[i]), float(intervals.ends[i]), int(least[i]))
        for i in chosen
        if least[i] > 0
    )
    n = len(workload)
    return TraceBound(max(0, n - round(forced)), n, tuple(spans))


def attainable(workload: Workload, cost: IterationCost, misses: int) -> bool:
    """Whether a schedule might serve all but `misses` requests on time."""
    if misses >= len(workload):
        return True
    return trace_bound(workload, cost, misses).served >= len(workload) - misses


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
    seconds = cost.tokens.perspective(np.broadcast_to(tokens[:, None], k.shape), k)
    seconds = seconds + cost.entries.perspective(np.broadcast_to(entries[:, None], k.shape), k)
    attention = work[:, PREFILL] + np.maximum(work[:, COMPUTE], work[:, MEMORY])
    time: FloatArray = np.where(some, seconds.min(axis=1) + attention, 0.0)
    return time


def due_tokens(c: WorkloadColumns, ends: FloatArray) -> FloatArray:
    """How many tokens of each request are due by each end (eq. 1): a row per end."""
    every = np.broadcast_to(np.arange(c.arrival.size), (ends.size, c.arrival.size))
    return _due(c, np.array(every), ends)


def _groups(c: WorkloadColumns) -> list[tuple[FloatArray, FloatArray, NDArray[np.int64]]]:
    """The intervals in groups: (starts, ends, the indices of the requests each may hold, −1
    for none). First the whole-run intervals from the first arrival, then per length the
    windows from each arrival, holding the requests that arrive within them (a request
    arriving with the same time before it in the workload left out: leaving work out only
    weakens an interval)."""
    n = c.arrival.size
    last = c.arrival + c.ttft + (c.output - 1.0) * c.tbt
    first = float(c.arrival[0])
    prefix = np.unique(np.quantile(last, np.linspace(0.3, 1.0, PREFIX_ENDS))) + 2.0 * EARLY
    everyone = np.broadcast_to(np.arange(n), (prefix.size, n))
    groups = [(np.full(prefix.size, first), prefix, np.array(everyone))]
    shortest = 0.5 * float(c.ttft.min())
    for length in np.geomspace(shortest, max(float(last.max()) - first, shortest), LENGTHS):
        ends = c.arrival + length
        stop = np.searchsorted(c.arrival, ends, side="right")
        width = int((stop - np.arange(n)).max())
        index = np.arange(n)[:, None] + np.arange(width)[None, :]
        groups.append((c.arrival.copy(), ends, np.where(index < stop[:, None], index, -1)))
    return groups


def _intervals(workload: Workload, cost: IterationCost, most: int) -> Intervals:
    """The intervals (module docstring) of `workload` and their work, for up to `most`
    misses each."""
    c = workload.columns()
    keep = min(most, len(workload)) + 1
    starts, ends, totals, largest, windows = [], [], [], [], []
    groups = _groups(c)
    for group_starts, group_ends, members in groups:
        for lo in range(0, group_starts.size, CHUNK):
            s, e = group_starts[lo : lo + CHUNK], group_ends[lo : lo + CHUNK]
            index = members[lo : lo + CHUNK]
            held = np.maximum(index, 0)
            due = _due(c, held, e) * ((index >= 0) & (c.arrival[held] >= s[:, None]))
            work = demand(cost, c.prompt[held].astype(np.float64), due, c.ttft[held])
            starts.append(s)
            ends.append(e)
            totals.append(work.sum(axis=1))
            zero = np.zeros((s.size, 1, len(COLUMNS)))
            top = np.cumsum(_largest_first(work, keep - 1), axis=1)
            largest.append(_padded(np.concatenate([zero, top], axis=1), keep))
            windows.append(_padded(_largest_first(due, keep), keep, fill=0.0))
    prefixes = groups[0][0].size
    chains = tuple(_chains(c, float(e), keep) for e in groups[0][1].tolist())
    return Intervals(
        np.concatenate(starts),
        np.concatenate(ends),
        np.concatenate(totals),
        np.concatenate(largest),
        np.concatenate(windows),
        chains + ((),) * (sum(g[0].size for g in groups) - prefixes),
    )


def _due(c: WorkloadColumns, held: NDArray[np.int64], ends: FloatArray) -> FloatArray:
    """`due_tokens` of the requests `held` (a row of indices per end)."""
    since = ends[:, None] - EARLY - c.arrival[held] - c.ttft[held]
    due = np.floor(since / c.tbt[held]) + 1.0
    clipped: FloatArray = np.clip(due, 0.0, c.output[held].astype(np.float64))
    return clipped


def _largest_first(values: FloatArray, count: int) -> FloatArray:
    """The `count` largest entries along axis 1, largest first."""
    if count <= 0:
        return values[:, :0]
    if count < values.shape[1]:
        values = -np.partition(-values, count - 1, axis=1)[:, :count]
    ordered: FloatArray = -np.sort(-values, axis=1)
    return ordered


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
