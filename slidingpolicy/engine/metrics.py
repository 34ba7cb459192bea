"""What users read off a run: SLO attainment, latency statistics, throughput, goodput.

One definition each, used by the engine, the CLI, the reports and the tests:

- token k of request i (k = 1 is the first token) is due at d_k = a_i + L_ttft + (k − 1)·L_tbt
  (eq. 1); a request **attains its SLO** iff it completes and every token, the first included,
  is produced by its deadline;
- **TTFT attainment**: the first token by a_i + L_ttft; **max-gap TBT attainment**: the request
  completes and its largest gap between consecutive tokens is ≤ L_tbt. The SLO does not
  require the latter: a token ahead of its deadline banks slack, so a later gap longer than
  L_tbt can still meet every deadline (SLO attainment 100% beside max-gap attainment 10% is
  consistent: most gaps were long, no deadline was missed);
- attainments are fractions of all requests of the workload: a request still live at the end
  of a run has missed, and so has one the policy **gave up** (`BatchPlan.given_up`: the
  engine finished it unserved, with its own reason, so that its client can retry elsewhere),
  counted apart as `given_up`;
- latency statistics, each as mean, median, standard deviation (population), p90 and p99,
  the percentiles nearest-rank (the smallest value whose cumulative count reaches ⌈q·N/100⌉),
  the median the p50:
  - **TTFT**: first token − arrival, over requests that produced a token;
  - **TPOT** (time per output token): (last token − first token) / (tokens − 1), over the
    completed requests with at least two tokens;
  - **ITL** (inter-token latency; TBT in the paper): every gap between consecutive tokens of a
    request, over all requests;
  - **E2E** (end-to-end latency): last token − arrival, over the completed requests;
  - **late TTFT** (p99 and max only): TTFT over the requests whose first token came after its
    TTFT deadline: what a late request, which a policy may serve last, waits;
  - **TTFT or notice** (p99 only): the first token − arrival, or for a request given up
    before its first token the notice − arrival: how long a client waits before it can act
    (read its answer, or retry elsewhere); the TTFT p99 when none is given up;
- **goodput**: the requests that attained their SLO per second of the run's span (what `vllm
  bench serve` calls request goodput); the engine's *capacity* is the highest arrival rate at
  which attainment stays ≥ 99% (`engine.capacity`);
- throughput: output tokens (and completed requests) per second of the run's span, from the
  first arrival to the last token;
- predictor error: the policy's predicted latency of a plan against the iteration's measured
  latency, over the iterations that schedule prefill tokens (where the prediction decides the
  chunk; decode-only iterations are advanced in closed form without a plan).
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Sequence
from itertools import chain, pairwise
from typing import Any

import attrs
import numpy as np
from numpy.typing import NDArray

from slidingpolicy.records.request import next_token_deadline
from slidingpolicy.workloads import WorkloadColumns

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

SLO_TARGET = 0.99
"""Attainment a rate must reach to count towards capacity (goodput)."""

PERCENTILES = (50, 90, 99)


def token_deadline(
    arrival: FloatArray, ttft: FloatArray, tbt: FloatArray, k: IntArray
) -> FloatArray:
    """d_k = a + L_ttft + (k − 1)·L_tbt, elementwise: token k's deadline (eq. 1)."""
    return next_token_deadline(arrival, ttft, tbt, k - 1)


def percentile(values: FloatArray, q: float, weights: IntArray | None = None) -> float:
    """Nearest-rank q-th percentile of `values` (each counted `weights` times); NaN if empty."""
    return percentiles(values, (q,), weights)[0]


def percentiles(
    values: FloatArray, qs: Sequence[float], weights: IntArray | None = None
) -> list[float]:
    """`percentile` at each of `qs`, sorting once."""
    if values.size == 0:
        return [math.nan] * len(qs)
    counts = np.ones(values.size, dtype=np.int64) if weights is None else weights
    order = np.argsort(values, kind="stable")
    cumulative = np.cumsum(counts[order])
    total = int(cumulative[-1])
    if total == 0:
        return [math.nan] * len(qs)
    ordered = values[order]
    result = []
    for q in qs:
        rank = max(1, math.ceil(q * total / 100))
        result.append(float(ordered[int(np.searchsorted(cumulative, rank))]))
    return result


def moments(values: FloatArray) -> tuple[float, float]:
    """Mean and population standard deviation of `values`; NaN for none."""
    if values.size == 0:
        return math.nan, math.nan
    mean = float(values.mean())
    return mean, float(np.sqrt(np.mean((values - mean) ** 2)))


@attrs.frozen(slots=True)
class Stats:
    """Mean, median, standard deviation, p90 and p99 of one latency (seconds; NaN if none)."""

    mean: float
    median: float
    std: float
    p90: float
    p99: float

    @classmethod
    def of(cls, values: FloatArray) -> Stats:
        """The statistics of `values` (module docstring)."""
        mean, std = moments(values)
        median, p90, p99 = percentiles(values, PERCENTILES)
        return cls(mean, median, std, p90, p99)


STAT_NAMES = ("mean", "median", "std", "p90", "p99")
"""The statistics of every latency, in the order they are shown."""

LATENCIES = {
    "ttft": "TTFT (time to first token)",
    "tpot": "TPOT (time per output token)",
    "tbt": "ITL (inter-token latency, TBT)",
    "e2e": "E2E (end-to-end latency)",
}
"""Each latency's field prefix in `Metrics` and its name on screen."""


DURATION_UNITS = (("ms", 1e-3), ("s", 1.0), ("min", 60.0), ("h", 3600.0))
"""The units durations are shown in, with their length in seconds."""


def duration_unit(seconds: Sequence[float]) -> tuple[str, float]:
    """The unit that reads for durations this long: ms below 1 s, s below a minute, min below
    an hour, h beyond; chosen on the largest finite value (ms when there is none)."""
    finite = [abs(v) for v in seconds if math.isfinite(v)]
    largest = max(finite, default=0.0)
    for (name, size), (_, following) in pairwise(DURATION_UNITS):
        if largest < following:
            return name, size
    return DURATION_UNITS[-1]


def stat_fields(latency: str) -> tuple[str, ...]:
    """The `Metrics` fields of `latency`'s statistics, in `STAT_NAMES` order (the median is
    the p50 field)."""
    if latency not in LATENCIES:
        raise KeyError(f"{latency!r} is not one of {tuple(LATENCIES)}")
    return tuple(f"{latency}_{'p50' if s == 'median' else s}" for s in STAT_NAMES)


def merged_percentiles(
    plain: FloatArray, values: FloatArray, weights: IntArray, qs: Sequence[float]
) -> list[float]:
    """`percentiles` at `qs` of `plain` (each counted once) with `values` (each counted
    `weights` times), equal to `percentiles` of their concatenation; sorts `plain` in place,
    which may hold tens of millions of values, and builds no array as long."""
    plain.sort()
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    cumulative = np.cumsum(weights[order])
    total = plain.size + (int(cumulative[-1]) if cumulative.size else 0)
    if total == 0:
        return [math.nan] * len(qs)

    def below(v: float, of: FloatArray) -> int:
        """How many of sorted `of` are ≤ v."""
        return int(np.searchsorted(of, v, side="right"))

    def weight_to(v: float) -> int:
        """The weight of `values` ≤ v."""
        k = below(v, ordered)
        return int(cumulative[k - 1]) if k else 0

    def plain_reach(i: int) -> int:
        """How many values are ≤ plain[i], counting plain[: i + 1] only (a lower bound)."""
        return i + 1 + weight_to(float(plain[i]))

    def weighted_reach(i: int) -> int:
        """How many values are ≤ ordered[i], counting ordered[: i + 1] only."""
        return below(float(ordered[i]), plain) + int(cumulative[i])

    result = []
    for q in qs:
        rank = max(1, math.ceil(q * total / 100))
        found = math.inf
        j = _first(plain.size, plain_reach, rank)
        if j < plain.size:
            found = float(plain[j])
        k = _first(ordered.size, weighted_reach, rank)
        if k < ordered.size:
            found = min(found, float(ordered[k]))
        result.append(found)
    return result


def _first(n: int, reach: Callable[[int], int], rank: int) -> int:
    """The least i < n with reach(i) ≥ rank, for `reach` non-decreasing; n if none."""
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi) // 2
        if reach(mid) >= rank:
            hi = mid
        else:
            lo = mid + 1
    return lo


class TokenLog:
    """Per-request token times, updated as the engine produces tokens (mutable, engine-only).

    `record` takes one iteration's tokens; `record_run` takes a decode-only run of iterations at
    once and gives exactly the same columns as recording each iteration in turn. The columns
    are Python lists (`counts`, `first`, `last`, `gap`, `late`, `preempted`; an engine touches a
    handful of requests per iteration), read as arrays through `generated`, `first_token`,
    `last_token`, `max_gap`, `max_lateness` and `preemptions`. `late_count` counts the requests
    with a late token so far (max_lateness > 0).
    """

    def __init__(self, columns: WorkloadColumns) -> None:
        n = columns.arrival.size
        self.columns = columns
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
        counts, late, last = self.counts, self.late, self.last
        arrival, ttft, tbt = self._arrival, self._ttft, self._tbt
        gaps = self._step_gaps
        for i in indices.tolist() if isinstance(indices, np.ndarray) else indices:
            generated = counts[i]
            k = generated + 1
            counts[i] = k
            lateness = now - next_token_deadline(arrival[i], ttft[i], tbt[i], generated)
            if lateness > late[i]:
                if lateness > 0.0 >= late[i]:
                    self.late_count += 1
                late[i] = lateness
            if k == 1:
                self.first[i] = now
            else:
                gap = now - last[i]
                gaps.append(gap)
                if gap > self.gap[i]:
                    self.gap[i] = gap
            last[i] = now

    def give_up(self, i: int, now: float) -> None:
        """Request i was given up at `now`: it ends unserved (module docstring)."""
        self.notice[i] = now
        if self.late[i] <= 0.0:
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
        self._gaps.append(first_gaps)
        self._gap_weights.append(1)
        if times.size > 1:
            steady: FloatArray = times[1:] - times[:-1]
            self._gaps.append(steady)
            self._gap_weights.append(len(listed))
            gap = np.maximum(first_gaps, steady.max())
        end = float(times[-1])
        size = int(times.size)
        counts, late, gaps, lasts = self.counts, self.late, self.gap, self.last
        for i, lateness_i, gap_i in zip(listed, lateness.tolist(), gap.tolist(), strict=True):
            if lateness_i > late[i]:
                if lateness_i > 0.0 >= late[i]:
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


@attrs.frozen(slots=True)
class RequestOutcome:
    """Per-request columns at the end of a run (NaN where a token never came)."""

    generated: IntArray
    ttft: FloatArray
    max_gap: FloatArray
    max_lateness: FloatArray
    finish: FloatArray
    preemptions: IntArray
    completed: NDArray[np.bool_]
    attained: NDArray[np.bool_]
    ttft_attained: NDArray[np.bool_]
    tbt_attained: NDArray[np.bool_]
    given_up: FloatArray
    """Seconds from arrival to the give-up notice (NaN where the request was not given up)."""


def outcome(log: TokenLog) -> RequestOutcome:
    """Judge every request against its SLO (module docstring)."""
    c = log.columns
    completed = log.generated == c.output
    ttft = log.first_token - c.arrival
    with np.errstate(invalid="ignore"):
        ttft_ok = ttft <= c.ttft
    return RequestOutcome(
        generated=log.generated.copy(),
        ttft=ttft,
        max_gap=np.where(log.generated > 0, log.max_gap, math.nan),
        max_lateness=np.where(log.generated > 0, log.max_lateness, math.nan),
        finish=np.where(completed, log.last_token, math.nan),
        preemptions=log.preemptions.copy(),
        completed=completed,
        attained=completed & (log.max_lateness <= 0.0),
        ttft_attained=ttft_ok,
        tbt_attained=completed & (log.max_gap <= c.tbt),
        given_up=np.array(log.notice, dtype=np.float64) - c.arrival,
    )


@attrs.frozen(slots=True, eq=False)
class Metrics:
    """The summary of one run. Times in seconds; NaN where nothing was measured, and two
    summaries are equal when every figure is, NaN equal to NaN (nothing measured in either:
    a run without a late request has no late TTFT)."""

    requests: int
    completed: int
    attainment: float
    ttft_attainment: float
    tbt_attainment: float
    ttft_p50: float
    ttft_p90: float
    ttft_p99: float
    tbt_p50: float
    tbt_p90: float
    tbt_p99: float
    output_tokens: int
    span: float
    token_throughput: float
    request_throughput: float
    iterations: int
    preemptions: int
    predictor_mae: float
    predictor_bias: float
    ttft_mean: float
    ttft_std: float
    tbt_mean: float
    tbt_std: float
    tpot_mean: float
    tpot_p50: float
    tpot_std: float
    tpot_p90: float
    tpot_p99: float
    e2e_mean: float
    e2e_p50: float
    e2e_std: float
    e2e_p90: float
    e2e_p99: float
    goodput: float
    late_ttft_p99: float
    late_ttft_max: float
    given_up: int
    ttft_or_notice_p99: float

    def stats(self, latency: str) -> Stats:
        """The statistics of `latency`, a key of `LATENCIES` ("ttft", "tpot", "tbt", "e2e")."""
        return Stats(*(getattr(self, field) for field in stat_fields(latency)))

    def to_dict(self) -> dict[str, Any]:
        """Plain values for JSON (NaN as None)."""
        return {
            k: (None if isinstance(v, float) and math.isnan(v) else v)
            for k, v in attrs.asdict(self).items()
        }

    def __eq__(self, other: object) -> bool:
        return type(other) is Metrics and self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash(tuple(self.to_dict().values()))


def summarize(
    log: TokenLog,
    end: float,
    iterations: int,
    predictor_errors: tuple[float, float, int] = (0.0, 0.0, 0),
) -> Metrics:
    """The run's metrics; `predictor_errors` is (Σ|T̂ − T|, Σ(T̂ − T), count)."""
    c = log.columns
    result = outcome(log)
    n = int(c.arrival.size)
    span = end - float(c.arrival[0]) if n else 0.0
    output_tokens = int(log.generated.sum())
    abs_error, signed_error, count = predictor_errors
    ttft, itl, tpot, e2e, late = _latencies(log, result)
    attained = float(result.attained.sum())
    answered = np.where(np.isnan(result.ttft), result.given_up, result.ttft)
    return Metrics(
        requests=n,
        completed=int(result.completed.sum()),
        attainment=float(result.attained.sum()) / n,
        ttft_attainment=float(result.ttft_attained.sum()) / n,
        tbt_attainment=float(result.tbt_attained.sum()) / n,
        ttft_p50=ttft.median,
        ttft_p90=ttft.p90,
        ttft_p99=ttft.p99,
        tbt_p50=itl.median,
        tbt_p90=itl.p90,
        tbt_p99=itl.p99,
        output_tokens=output_tokens,
        span=span,
        token_throughput=output_tokens / span if span > 0 else math.nan,
        request_throughput=float(result.completed.sum()) / span if span > 0 else math.nan,
        iterations=iterations,
        preemptions=int(log.preemptions.sum()),
        predictor_mae=abs_error / count if count else math.nan,
        predictor_bias=signed_error / count if count else math.nan,
        ttft_mean=ttft.mean,
        ttft_std=ttft.std,
        tbt_mean=itl.mean,
        tbt_std=itl.std,
        tpot_mean=tpot.mean,
        tpot_p50=tpot.median,
        tpot_std=tpot.std,
        tpot_p90=tpot.p90,
        tpot_p99=tpot.p99,
        e2e_mean=e2e.mean,
        e2e_p50=e2e.median,
        e2e_std=e2e.std,
        e2e_p90=e2e.p90,
        e2e_p99=e2e.p99,
        goodput=attained / span if span > 0 else math.nan,
        late_ttft_p99=percentile(late, 99),
        late_ttft_max=float(late.max()) if late.size else math.nan,
        given_up=int((~np.isnan(result.given_up)).sum()),
        ttft_or_notice_p99=percentile(answered[~np.isnan(answered)], 99),
    )


def _latencies(
    log: TokenLog, result: RequestOutcome
) -> tuple[Stats, Stats, Stats, Stats, FloatArray]:
    """The TTFT, ITL (TBT), TPOT and end-to-end statistics, and the late requests' TTFTs."""
    c = log.columns
    produced = log.generated > 0
    ended = result.completed
    several = ended & (log.generated >= 2)
    tpot = Stats.of(
        (result.finish[several] - (c.arrival + result.ttft)[several]) / (log.generated[several] - 1)
    )
    return (
        Stats.of(result.ttft[produced]),
        _gap_stats(*log.gaps()),
        tpot,
        Stats.of(result.finish[ended] - c.arrival[ended]),
        result.ttft[produced & ~result.ttft_attained],
    )


def _gap_stats(plain: FloatArray, gaps: FloatArray, weights: IntArray) -> Stats:
    """`Stats` of every inter-token gap: `plain` (each once) and `gaps` (each `weights` times),
    without building an array of all of them (`merged_percentiles`). The sums are exact
    (`exact_sum`), so a gap counted once k times and a gap counted k times at once give the
    same bits: stepping and the closed-form decode runs agree to the last bit."""
    total = plain.size + int(weights.sum())
    mean = std = math.nan
    if total:
        mean = exact_sum(plain, gaps, weights) / total
        std = math.sqrt(exact_sum((plain - mean) ** 2, (gaps - mean) ** 2, weights) / total)
    median, p90, p99 = merged_percentiles(plain, gaps, weights, PERCENTILES)
    return Stats(mean, median, std, p90, p99)


def _split(a: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Dekker's split: a = high + low, each with at most 26 significant bits."""
    c = 134217729.0 * a  # 2^27 + 1
    high = c - (c - a)
    return high, a - high


def exact_sum(plain: FloatArray, values: FloatArray, weights: IntArray) -> float:
    """Σ plain + Σ weights·values, correctly rounded (`math.fsum` over the products made
    exact by Dekker's two-product): the same float however the terms are grouped."""
    w = weights.astype(np.float64)
    product = w * values
    wh, wl = _split(w)
    vh, vl = _split(values)
    error = ((wh * vh - product) + wh * vl + wl * vh) + wl * vl
    return math.fsum(chain(plain.tolist(), product.tolist(), error.tolist()))
