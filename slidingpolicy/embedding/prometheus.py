"""The policy's metrics (`slidingpolicy.telemetry.METRICS`) as Prometheus metrics, fed by the
policy's loop at each step from what it already has: the decision, the step it ran and its
measured time. It needs prometheus_client (the ``prometheus`` extra); an adapter exports
them where its engine's operators look (a server's ``GET /metrics``).

Gauges report the value set last when several processes write (prometheus_client's
multiprocess mode, under PROMETHEUS_MULTIPROC_DIR), as an engine whose scheduler runs in a
child of its API server needs.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram

from slidingpolicy.embedding.steps import Decision
from slidingpolicy.records.plan import BatchPlan
from slidingpolicy.records.state import SchedulerState
from slidingpolicy.telemetry import (
    CANCELLED,
    DEMOTED,
    FALLBACK_STEPS,
    FAULTS,
    GIVEN_UP,
    LATE_START,
    LEARNER_ROWS,
    MARGIN,
    METRICS,
    PLANS,
    PREDICTED_STEP,
    STEP,
    STEP_RATIO,
    demoted,
    late_starts,
    learner_rows,
)

SPECS = {spec.name: spec for spec in METRICS}


def _counter(name: str, registry: CollectorRegistry | None) -> Counter:
    spec = SPECS[name]
    return Counter(spec.name, spec.help, spec.labels, registry=registry)


def _histogram(name: str, registry: CollectorRegistry | None) -> Histogram:
    spec = SPECS[name]
    return Histogram(spec.name, spec.help, spec.labels, registry=registry, buckets=spec.buckets)


def _gauge(name: str, registry: CollectorRegistry | None) -> Gauge:
    spec = SPECS[name]
    return Gauge(spec.name, spec.help, spec.labels, registry=registry,
                 multiprocess_mode="mostrecent")  # fmt: skip


class PolicyMetrics:
    """The metrics of `METRICS`, registered in `registry`."""

    def __init__(self, registry: CollectorRegistry | None = REGISTRY) -> None:
        self.plans = _counter(PLANS, registry)
        self.fallback_steps = _counter(FALLBACK_STEPS, registry)
        self.faults = _counter(FAULTS, registry)
        self.margin = _gauge(MARGIN, registry)
        self.step = _histogram(STEP, registry)
        self.predicted_step = _histogram(PREDICTED_STEP, registry)
        self.step_ratio = _histogram(STEP_RATIO, registry)
        self.demoted = _counter(DEMOTED, registry)
        self.late_start = _histogram(LATE_START, registry)
        self.given_up = _counter(GIVEN_UP, registry)
        self.learner_rows = _gauge(LEARNER_ROWS, registry)
        self.cancelled = _counter(CANCELLED, registry)


@functools.cache
def process_metrics() -> PolicyMetrics:
    """This process's metrics, in prometheus_client's default registry (made once)."""
    return PolicyMetrics()


class MetricsFeed:
    """What one policy loop adds to the metrics (`slidingpolicy.embedding.loop.StepMetrics`).
    It remembers the faults it has counted and the requests it has counted as demoted (those
    still live), so that each is counted once."""

    def __init__(self, metrics: PolicyMetrics | None = None) -> None:
        self.metrics = process_metrics() if metrics is None else metrics
        self._faults: dict[str, int] = {}
        self._demoted: set[str] = set()
        self._kept = 0

    def decided(
        self,
        policy: object,
        decision: Decision,
        faults: Mapping[str, int],
        live: Callable[[str], bool],
    ) -> None:
        """`policy`'s `decision` for a step, the loop's fault counts by kind so far, and
        whether a request id is still the engine's (`live`)."""
        metrics = self.metrics
        self._count_faults(faults)
        state, plan, fallback = decision.state, decision.plan, decision.fallback
        if fallback is not None:
            metrics.fallback_steps.labels(fallback).inc()
        elif plan is not None:
            metrics.plans.labels(plan.branch.value).inc()
            metrics.margin.set(plan.diagnostics.margin)
        if state is not None:
            seen = self._demoted
            new = demoted(policy, state) - seen
            if new:
                metrics.demoted.inc(len(new))
                seen |= new
            if len(seen) > 2 * self._kept + 64:
                self._demoted = {rid for rid in seen if live(rid)}
                self._kept = len(self._demoted)

    def observed(
        self,
        decision: Decision,
        state: SchedulerState,
        executed: BatchPlan,
        latency: float,
        policy_state: object,
    ) -> None:
        """The step of `decision`, decided on `state`, ran `executed` in `latency` seconds;
        `policy_state` is the policy's state it was planned from."""
        metrics = self.metrics
        metrics.step.observe(latency)
        metrics.learner_rows.set(learner_rows(policy_state))
        plan = decision.plan
        if decision.fallback is None and plan is not None:
            predicted = plan.predicted_latency
            metrics.predicted_step.observe(predicted)
            if predicted > 0.0:
                metrics.step_ratio.observe(latency / predicted)
        for late in late_starts(state, executed):
            metrics.late_start.observe(late)

    def given_up(self, count: int) -> None:
        """`count` more requests the policy gave up on are finished."""
        self.metrics.given_up.inc(count)

    def cancelled(self, count: int) -> None:
        """`count` more requests were cancelled because their client left."""
        self.metrics.cancelled.inc(count)

    def _count_faults(self, counted: Mapping[str, int]) -> None:
        known = self._faults
        for kind, count in counted.items():
            added = count - known.get(kind, 0)
            if added > 0:
                self.metrics.faults.labels(kind).inc(added)
                known[kind] = count
