"""A policy wrapper that times every decision: the report's CPU cost per policy and path.

A plan is a pure function of (pstate, state), so each decision is timed `repeats` times and
the fastest kept: the cost of the decision, not of whatever else the machine was doing.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from slidingpolicy.policy import DecodeRunObserver
from slidingpolicy.records.plan import BatchPlan
from slidingpolicy.records.request import Request
from slidingpolicy.records.state import SchedulerState


class _Timed:
    """Plans as `inner` does; keeps each decision's path and fastest time, and each
    iteration's measured latency."""

    def __init__(self, inner: Any, repeats: int) -> None:
        self.inner = inner
        self.name: str = inner.name
        self.token_budget: int = inner.token_budget
        self.repeats = repeats
        self.decisions: list[tuple[str, float]] = []
        self.latencies: list[float] = []

    def init(self) -> Any:
        """The inner policy's state."""
        return self.inner.init()

    def plan(self, pstate: Any, state: SchedulerState) -> tuple[BatchPlan, Any]:
        """The inner policy's plan, timed `repeats` times."""
        fastest = float("inf")
        for _ in range(self.repeats):
            started = time.perf_counter()
            plan, after = self.inner.plan(pstate, state)
            fastest = min(fastest, time.perf_counter() - started)
        self.decisions.append((plan.branch, fastest))
        return plan, after

    def observe(self, pstate: Any, state: SchedulerState, plan: BatchPlan, latency: float) -> Any:
        """Keep the latency; the inner policy observes it."""
        self.latencies.append(latency)
        return self.inner.observe(pstate, state, plan, latency)

    def summary(self) -> list[dict[str, Any]]:
        """Per path and over all decisions: count, p50, p99 and mean (µs), and the mean
        iteration latency (ms) of the run, for the cost's share of an iteration."""
        iteration = 1000.0 * float(np.mean(self.latencies)) if self.latencies else float("nan")
        paths = sorted({path for path, _ in self.decisions})
        rows = []
        for path in [*paths, "all"]:
            times = np.array([t for p, t in self.decisions if path in (p, "all")])
            rows.append(
                {
                    "path": path,
                    "decisions": int(times.size),
                    "p50_us": 1e6 * float(np.percentile(times, 50)),
                    "p99_us": 1e6 * float(np.percentile(times, 99)),
                    "mean_us": 1e6 * float(times.mean()),
                    "iteration_ms": iteration,
                }
            )
        return rows


class _TimedDecodeRuns(_Timed):
    """A `_Timed` of a `DecodeRunObserver`: decode-only runs observed at once, as it does."""

    def observe_decodes(
        self, pstate: Any, decodes: Sequence[Request], latencies: Sequence[float]
    ) -> Any:
        """Keep the run's latencies; the inner policy observes them."""
        self.latencies.extend(latencies)
        return self.inner.observe_decodes(pstate, decodes, latencies)


def timed(inner: Any, repeats: int) -> _Timed:
    """`inner`, timed, observing decode-only runs the way `inner` does."""
    kind = _TimedDecodeRuns if isinstance(inner, DecodeRunObserver) else _Timed
    return kind(inner, repeats)
