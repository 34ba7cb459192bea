"""The summary of a run: attainments, latency statistics, throughput and goodput."""

from __future__ import annotations

import math
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
