"""What an engine adapter reports on its server's metrics endpoint: the policy's metrics as
plain data (`METRICS`: Prometheus names, types, labels, help, buckets), which each adapter
registers with its engine's Prometheus client, and the pure counts behind the two that read
the requests (`demoted`, `late_starts`). Nothing here does I/O or keeps a value.
"""

from __future__ import annotations

from typing import Literal

import attrs

from slidingpolicy.policies.online import Online, OnlineState
from slidingpolicy.policies.slidingserve import SlidingServe
from slidingpolicy.records.plan import BatchPlan
from slidingpolicy.records.sliding_config import SlidingConfig
from slidingpolicy.records.state import SchedulerState
from slidingpolicy.stages.order import burst_shed

Kind = Literal["counter", "gauge", "histogram"]


@attrs.frozen(slots=True)
class MetricSpec:
    """One metric: its exposed `name` (a counter's ends in ``_total``, a time's in
    ``_seconds``), Prometheus `kind`, `labels`, `help` text, and a histogram's `buckets`
    (upper bounds, ascending; ``+Inf`` is implied)."""

    name: str
    kind: Kind
    help: str
    labels: tuple[str, ...] = ()
    buckets: tuple[float, ...] = ()


PLANS = "slidingpolicy_plans_total"
FALLBACK_STEPS = "slidingpolicy_fallback_steps_total"
FAULTS = "slidingpolicy_faults_total"
MARGIN = "slidingpolicy_latency_margin"
STEP = "slidingpolicy_step_seconds"
PREDICTED_STEP = "slidingpolicy_predicted_step_seconds"
STEP_RATIO = "slidingpolicy_step_time_ratio"
DEMOTED = "slidingpolicy_demoted_requests_total"
LATE_START = "slidingpolicy_late_start_seconds"
LEARNER_ROWS = "slidingpolicy_learner_rows"
GIVEN_UP = "slidingpolicy_requests_given_up_total"
CANCELLED = "slidingpolicy_requests_cancelled_total"

STEP_BUCKETS = (0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0)
RATIO_BUCKETS = (0.5, 0.8, 0.9, 1.0, 1.1, 1.25, 1.5, 2.0, 3.0, 5.0)
LATE_BUCKETS = (0.1, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)

METRICS: tuple[MetricSpec, ...] = (
    MetricSpec(
        PLANS, "counter", "Steps run as the policy planned them, by plan branch.", ("path",)
    ),
    MetricSpec(
        FALLBACK_STEPS,
        "counter",
        "Steps the engine scheduled itself because the snapshot or the policy raised or the "
        "plan broke an invariant, by reason.",
        ("reason",),
    ),
    MetricSpec(
        FAULTS,
        "counter",
        "Faults the adapter counted (fallback steps, observe errors, rejected SLOs), by kind.",
        ("kind",),
    ),
    MetricSpec(
        MARGIN,
        "gauge",
        "Latency margin m the last plan held its predicted step times to (learned online "
        "by default; 1 for a policy without one).",
    ),
    MetricSpec(STEP, "histogram", "Measured time of each observed step.", (), STEP_BUCKETS),
    MetricSpec(
        PREDICTED_STEP,
        "histogram",
        "Predicted time T of each step run as planned, before the margin.",
        (),
        STEP_BUCKETS,
    ),
    MetricSpec(
        STEP_RATIO,
        "histogram",
        "Measured over predicted time of each step run as planned (the margin covers a "
        "quantile of it).",
        (),
        RATIO_BUCKETS,
    ),
    MetricSpec(
        DEMOTED,
        "counter",
        "Requests the policy's order demoted as hopeless: waiting past their TTFT deadline, "
        "or given up by burst shedding.",
    ),
    MetricSpec(
        LATE_START,
        "histogram",
        "How far past its TTFT deadline a late request was when its prefill was scheduled.",
        (),
        LATE_BUCKETS,
    ),
    MetricSpec(
        LEARNER_ROWS,
        "gauge",
        "Observations the online learner holds: its margin window and the rows waiting to be "
        "folded into its statistics (bounded; 0 for a policy that does not learn).",
    ),
    MetricSpec(
        GIVEN_UP,
        "counter",
        "Requests the policy gave up on (give_up_after: their TTFT deadline passed that long "
        "ago), finished early so that their clients may retry elsewhere.",
    ),
    MetricSpec(
        CANCELLED,
        "counter",
        "Requests cancelled in the engine because their client left (it disconnected or "
        "stopped reading) before they finished.",
    ),
)
"""Every metric an adapter exposes, in this order."""


def _sliding_config(policy: object) -> SlidingConfig | None:
    """The SlidingServe configuration `policy` orders its queue by (learning online or not),
    None for a policy of another kind."""
    inner = policy.inner if isinstance(policy, Online) else policy
    return inner.config if isinstance(inner, SlidingServe) else None


def demoted(policy: object, state: SchedulerState) -> frozenset[str]:
    """The ids of the waiting and prefilling requests of `state` that `policy`'s MLPS order
    puts behind every live one (eq. 15 with `demote_late`): their TTFT deadline passed, or
    burst shedding gave them up (`stages.order.burst_shed`); none for a policy that does not
    demote (EDF order, `demote_late=False`, a baseline)."""
    config = _sliding_config(policy)
    if config is None or not config.demote_late or config.order != "mlps":
        return frozenset()
    candidates = state.prefill_candidates
    now = state.now
    late = frozenset(r.id for r in candidates if r.deadline <= now)
    if config.shed_bursts:
        late |= burst_shed(candidates, now, state.prefill_throughput)
    return late


def late_starts(state: SchedulerState, plan: BatchPlan) -> list[float]:
    """now − d_i (seconds) of each request whose prefill `plan` starts (nothing of its prompt
    cached yet) past its TTFT deadline d_i (eq. 1), in state order; a request preempted by
    recompute starts again, its deadline that of its next token."""
    now = state.now
    late = [r for r in state.prefill_candidates if r.prefilled == 0 and r.deadline <= now]
    if not late:
        return []
    started = {a.request_id for a in plan.allocations}
    return [now - r.deadline for r in late if r.id in started]


def learner_rows(policy_state: object) -> int:
    """The observation rows a policy state's online learner holds (eq. 6, learned): the
    batches of its margin window and the rows not yet folded; 0 for a policy that does not
    learn."""
    if not isinstance(policy_state, OnlineState):
        return 0
    learner = policy_state.learner
    return learner.window.size + learner.pending_rows
