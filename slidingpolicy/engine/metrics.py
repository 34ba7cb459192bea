"""What users read off a run: SLO attainment, tail latencies, throughput, goodput inputs.

One definition each, used by the engine, the CLI, the reports and the tests:

- token k of request i (k = 1 is the first token) is due at d_k = a_i + L_ttft + (k − 1)·L_tbt
  (eq. 1); a request **attains its SLO** iff it completes and every token, the first included,
  is produced by its deadline;
- **TTFT attainment**: the first token by a_i + L_ttft; **TBT attainment**: the request
  completes and its largest gap between consecutive tokens is ≤ L_tbt;
- attainments are fractions of all requests of the workload: a request still live at the end
  of a run has missed;
- percentiles are nearest-rank: the smallest value whose cumulative count reaches ⌈q·N/100⌉;
  TTFT over requests that produced a token, TBT over every gap between consecutive tokens of a
  request;
- throughput: output tokens (and completed requests) per second of the run's span, from the
  first arrival to the last token;
- predictor error: the policy's predicted latency of a plan against the iteration's measured
  latency, over the iterations that schedule prefill tokens (where the prediction decides the
  chunk; decode-only iterations are advanced in closed form without a plan).
"""

from __future__ import annotations

import math
from typing import Any

import attrs
import numpy as np
from numpy.typing import NDArray

from slidingpolicy.workloads import WorkloadColumns

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

SLO_TARGET = 0.99
"""Attainment a rate must reach to count towards capacity (goodput)."""

PERCENTILES = (50, 90, 99)


def token_deadline(
    arrival: FloatArray, ttft: FloatArray, tbt: FloatArray, k: IntArray
) -> FloatArray:
    """d_k = a + L_ttft + (k − 1)·L_tbt, elementwise (eq. 1)."""
    deadline: FloatArray = arrival + ttft + (k - 1) * tbt
    return deadline


def percentile(values: FloatArray, q: float, weights: IntArray | None = None) -> float:
    """Nearest-rank q-th percentile of `values` (each counted `weights` times); NaN if empty."""
    if values.size == 0:
        return math.nan
    counts = np.ones(values.size, dtype=np.int64) if weights is None else weights
    order = np.argsort(values, kind="stable")
    cumulative = np.cumsum(counts[order])
    total = int(cumulative[-1])
    if total == 0:
        return math.nan
    rank = max(1, math.ceil(q * total / 100))
    return float(values[order][int(np.searchsorted(cumulative, rank))])


class TokenLog:
    """Per-request token times, updated as the engine produces tokens (mutable, engine-only).

    `record` takes one iteration's tokens; `record_run` takes a decode-only run of iterations at
    once and gives exactly the same columns as recording each iteration in turn.
    """

    def __init__(self, columns: WorkloadColumns) -> None:
        n = columns.arrival.size
        self.columns = columns
        self.generated = np.zeros(n, dtype=np.int64)
        self.first_token = np.full(n, math.nan)
        self.last_token = np.full(n, math.nan)
        self.max_gap = np.zeros(n)
        self.max_lateness = np.full(n, -math.inf)
        self.preemptions = np.zeros(n, dtype=np.int64)
        self._gaps: list[FloatArray] = []
        self._gap_weights: list[int] = []

    def record(self, indices: IntArray, now: float) -> None:
        """Requests `indices` each produced their next token at `now`."""
        c = self.columns
        self.generated[indices] += 1
        k = self.generated[indices]
        deadline = token_deadline(c.arrival[indices], c.ttft[indices], c.tbt[indices], k)
        lateness = now - deadline
        self.max_lateness[indices] = np.maximum(self.max_lateness[indices], lateness)
        first = k == 1
        self.first_token[indices[first]] = now
        later = indices[~first]
        if later.size:
            gaps: FloatArray = now - self.last_token[later]
            self.max_gap[later] = np.maximum(self.max_gap[later], gaps)
            self._gaps.append(gaps)
            self._gap_weights.append(1)
        self.last_token[indices] = now

    def record_run(self, indices: IntArray, times: FloatArray) -> None:
        """Requests `indices`, all decoding, each produced one token at every time in `times`."""
        c = self.columns
        steps = np.arange(1, times.size + 1, dtype=np.int64)
        k = self.generated[indices][:, None] + steps[None, :]
        deadline = token_deadline(
            c.arrival[indices][:, None], c.ttft[indices][:, None], c.tbt[indices][:, None], k
        )
        lateness = (times[None, :] - deadline).max(axis=1)
        self.max_lateness[indices] = np.maximum(self.max_lateness[indices], lateness)
        first_gaps: FloatArray = times[0] - self.last_token[indices]
        gap = first_gaps
        self._gaps.append(first_gaps)
        self._gap_weights.append(1)
        if times.size > 1:
            steady: FloatArray = times[1:] - times[:-1]
            self._gaps.append(steady)
            self._gap_weights.append(int(indices.size))
            gap = np.maximum(first_gaps, steady.max())
        self.max_gap[indices] = np.maximum(self.max_gap[indices], gap)
        self.generated[indices] += times.size
        self.last_token[indices] = times[-1]

    def gaps(self) -> tuple[FloatArray, IntArray]:
        """Every inter-token gap so far, as values and their counts."""
        if not self._gaps:
            return np.zeros(0), np.zeros(0, dtype=np.int64)
        weights = np.concatenate(
            [
                np.full(g.size, w, dtype=np.int64)
                for g, w in zip(self._gaps, self._gap_weights, strict=True)
            ]
        )
        return np.concatenate(self._gaps), weights


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
    )


@attrs.frozen(slots=True)
class Metrics:
    """The summary of one run. Times in seconds; NaN where nothing was measured."""

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

    def to_dict(self) -> dict[str, Any]:
        """Plain values for JSON (NaN as None)."""
        return {
            k: (None if isinstance(v, float) and math.isnan(v) else v)
            for k, v in attrs.asdict(self).items()
        }


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
    produced = log.generated > 0
    gaps, weights = log.gaps()
    span = end - float(c.arrival[0]) if n else 0.0
    output_tokens = int(log.generated.sum())
    abs_error, signed_error, count = predictor_errors
    ttft = result.ttft[produced]
    return Metrics(
        requests=n,
        completed=int(result.completed.sum()),
        attainment=float(result.attained.sum()) / n,
        ttft_attainment=float(result.ttft_attained.sum()) / n,
        tbt_attainment=float(result.tbt_attained.sum()) / n,
        ttft_p50=percentile(ttft, 50),
        ttft_p90=percentile(ttft, 90),
        ttft_p99=percentile(ttft, 99),
        tbt_p50=percentile(gaps, 50, weights),
        tbt_p90=percentile(gaps, 90, weights),
        tbt_p99=percentile(gaps, 99, weights),
        output_tokens=output_tokens,
        span=span,
        token_throughput=output_tokens / span if span > 0 else math.nan,
        request_throughput=float(result.completed.sum()) / span if span > 0 else math.nan,
        iterations=iterations,
        preemptions=int(log.preemptions.sum()),
        predictor_mae=abs_error / count if count else math.nan,
        predictor_bias=signed_error / count if count else math.nan,
    )


def meets_target(metrics: Metrics, target: float = SLO_TARGET) -> bool:
    """True when the run counts towards capacity: attainment ≥ `target`."""
    return metrics.attainment >= target
