"""The summary of a run: attainments, latency statistics, throughput and goodput."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np

from slidingpolicy.metrics.moments import exact_sum
from slidingpolicy.metrics.outcome import RequestOutcome, outcome
from slidingpolicy.metrics.percentiles import (
    PERCENTILES,
    FloatArray,
    IntArray,
    merged_percentiles,
    percentile,
)
from slidingpolicy.metrics.stats import Stats, stat_fields
from slidingpolicy.metrics.token_log import TokenLog

SLO_TARGET = 0.99
"""Attainment a rate must reach to count towards capacity (goodput)."""


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
    drain: float
    waiting: int

    @property
    def drain_share(self) -> float:
        """The drain's share of the span (0 without a span)."""
        return self.drain / self.span if self.span > 0 else 0.0

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
    waiting: Sequence[int] = (),
) -> Metrics:
    """The run's metrics over its counted requests (`TokenLog.counted`: a steady-state
    trial's window, or every request); `predictor_errors` is (Σ|T̂ − T|, Σ(T̂ − T), count);
    `waiting` are the requests still waiting for their first token when a steady-state trial
    stopped at its horizon, each counted in the TTFT statistics with its wait so far."""
    counted = np.flatnonzero(log.counted)
    result = outcome(log).of(counted)
    arrival = log.columns.arrival[counted]
    generated = log.generated[counted]
    n = int(counted.size)
    span = end - float(arrival[0]) if n else 0.0
    output_tokens = int(generated.sum())
    abs_error, signed_error, count = predictor_errors
    still = np.isin(counted, np.asarray(waiting, dtype=np.int64))
    waited = np.where(still, end - arrival, result.ttft)
    ttft, itl, tpot, e2e, late = _latencies(log, arrival, generated, result, waited)
    attained = float(result.attained.sum())
    answered = np.where(np.isnan(waited), result.given_up, waited)
    return Metrics(
        requests=n,
        completed=int(result.completed.sum()),
        attainment=attained / n,
        ttft_attainment=float(result.ttft_attained.sum()) / n,
        tbt_attainment=float(result.tbt_attained.sum()) / n,
        output_tokens=output_tokens,
        span=span,
        token_throughput=output_tokens / span if span > 0 else math.nan,
        request_throughput=float(result.completed.sum()) / span if span > 0 else math.nan,
        iterations=iterations,
        preemptions=int(result.preemptions.sum()),
        predictor_mae=abs_error / count if count else math.nan,
        predictor_bias=signed_error / count if count else math.nan,
        goodput=attained / span if span > 0 else math.nan,
        late_ttft_p99=percentile(late, 99),
        late_ttft_max=float(late.max()) if late.size else math.nan,
        given_up=int((~np.isnan(result.given_up)).sum()),
        ttft_or_notice_p99=percentile(answered[~np.isnan(answered)], 99),
        drain=drain(result, float(log.columns.arrival[-1]) if log.columns.arrival.size else 0.0),
        waiting=int(still.sum()),
        **_fields("ttft", ttft),
        **_fields("tbt", itl),
        **_fields("tpot", tpot),
        **_fields("e2e", e2e),
    )


def _fields(latency: str, stats: Stats) -> dict[str, float]:
    """`stats` as the `Metrics` fields of `latency` (`stat_fields`)."""
    return dict(zip(stat_fields(latency), attrs.astuple(stats), strict=True))


def drain(result: RequestOutcome, last_arrival: float) -> float:
    """How long counted requests were still served on time after the last arrival: the
    finite trial's free time, when no later request competed with them."""
    finished = result.finish[result.attained]
    return max(0.0, float(finished.max()) - last_arrival) if finished.size else 0.0


def _latencies(
    log: TokenLog,
    arrival: FloatArray,
    generated: IntArray,
    result: RequestOutcome,
    waited: FloatArray,
) -> tuple[Stats, Stats, Stats, Stats, FloatArray]:
    """The TTFT, ITL (TBT), TPOT and end-to-end statistics, and the late requests' TTFTs, of
    the counted requests (their `arrival`, `generated` and `result`; `waited`: the TTFT, or
    the wait so far of one still waiting at the end)."""
    produced = ~np.isnan(waited)
    ended = result.completed
    several = ended & (generated >= 2)
    tpot = Stats.of(
        (result.finish[several] - (arrival + result.ttft)[several]) / (generated[several] - 1)
    )
    return (
        Stats.of(waited[produced]),
        _gap_stats(*log.gaps()),
        tpot,
        Stats.of(result.finish[ended] - arrival[ended]),
        waited[produced & ~result.ttft_attained],
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
