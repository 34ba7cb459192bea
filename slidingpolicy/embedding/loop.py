"""A policy's life inside an engine, written once for every engine.

Each step the engine's adapter asks `PolicyLoop.decide` what to run: the loop reads the
engine's requests as records through the adapter's `EngineView`, asks the policy for a plan
and checks it against the least of the policy's and the engine's token budgets. A request
the snapshot cannot represent (its SLOs or counts make no `Request`) is refused alone: it
is left out, and the adapter finishes it with the reason (`take_finished`) while every other
request keeps the policy. A snapshot, plan or check that fails otherwise makes the step a
fallback, which the engine schedules itself. Every fault is counted by kind and logged once.
A plan's given-up requests (`give_up_after`) are finished alone the same way, with a notice.
A policy that learns online gets its solver loaded when the loop starts, not at its first
full refit, inside a step; its refits run on a thread of their own while the engine steps
(`refit_aside`, `refits.Refits`), each put in force a fixed number of observations after
it was asked for.

When a step starts (`started`) and when its output has been applied (`finished`), the loop
measures its time on its one clock (`clock.Clock`), writes the step trace, updates ρ_t and
tells the policy's `observe` what ran. Requests the engine finished or their clients
abandoned are forgotten (`forget`), the latter counted.
"""

from __future__ import annotations

import logging
from collections import Counter, deque
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Generic, Protocol, TypeVar

import attrs

from slidingpolicy.embedding.clock import Clock
from slidingpolicy.embedding.config import AdapterConfig
from slidingpolicy.embedding.executed import executed_plan
from slidingpolicy.embedding.notices import REFUSED, given_up_notice, refused_notice
from slidingpolicy.embedding.refits import Refits
from slidingpolicy.embedding.steps import Decision, PendingStep
from slidingpolicy.errors import InvalidRecordError
from slidingpolicy.invariants import check_plan
from slidingpolicy.policies.online import Online
from slidingpolicy.policy import Policy
from slidingpolicy.pricing.fit import load_solver
from slidingpolicy.pricing.model import LatencyPredictor
from slidingpolicy.pricing.throughput import next_throughput
from slidingpolicy.records.plan import Allocation, BatchPlan
from slidingpolicy.records.request import Request
from slidingpolicy.records.slo import Slo
from slidingpolicy.records.state import SchedulerState
from slidingpolicy.routing import ReplicaReport, report_from
from slidingpolicy.step_trace import TraceStep, TraceWriter

logger = logging.getLogger(__name__)

Handle = TypeVar("Handle")


class EngineView(Protocol[Handle]):
    """What the loop reads of an engine; an adapter writes one over its engine's queues.
    A handle is the engine's own object for a request, the same object while the request
    lives."""

    def candidates(self) -> Iterable[tuple[str, Handle]]:
        """Every request the engine could schedule now, by id: the running ones, then the
        waiting ones in queue order."""

    def slo(self, handle: Handle, default: Slo) -> Slo:
        """The request's SLOs (`slidingpolicy.embedding.slo_on_wire` for those on the wire),
        `default` for those it lacks; `InvalidRecordError` when it carries one no request
        may have. Read once, when the loop first sees the request."""

    def stamp(self, handle: Handle) -> float:
        """When the request arrived, on the engine's own clock (read once)."""

    def clock(self) -> float:
        """The engine's own clock, that stamps its requests (read once a snapshot)."""

    def record(
        self, handle: Handle, slo: Slo, arrival: float, known: Request | None
    ) -> Request | None:
        """The request's record now (`known`, its record of the last step, when nothing
        changed); None when it has nothing to run; `InvalidRecordError` when its counts make
        no record."""

    def live(self, request_id: str) -> bool:
        """Whether the engine still holds the request."""


class StepMetrics(Protocol):
    """Where the loop counts (`slidingpolicy.embedding.prometheus.MetricsFeed`)."""

    def decided(
        self, policy: object, decision: Decision, faults: Mapping[str, int],
        live: Callable[[str], bool],
    ) -> None: ...  # fmt: skip

    def observed(
        self, decision: Decision, state: SchedulerState, executed: BatchPlan, latency: float,
        policy_state: object,
    ) -> None: ...  # fmt: skip

    def given_up(self, count: int) -> None: ...

    def cancelled(self, count: int) -> None: ...


@attrs.define(slots=True)
class _Known(Generic[Handle]):
    """What the loop keeps of a request between steps: the engine's handle, its SLOs, its
    arrival on the loop's clock and its last record."""

    handle: Handle
    slo: Slo
    arrival: float
    record: Request | None = None


def require_budget(
    policy: Policy[Any], engine_budget: int, record: str, field: str, remedy: str
) -> None:
    """Refuse to start a policy that plans more tokens a step than the engine holds
    (`engine_budget`, its setting `field` of `record`); `remedy` says how to raise it."""
    budget = policy.token_budget
    if budget > engine_budget:
        raise InvalidRecordError(
            record,
            field,
            f"={engine_budget!r}: policy {policy.name!r} plans up to {budget} tokens a step, "
            f"more than the engine holds: lower the policy's budget option or {remedy}",
        )


class PolicyLoop(Generic[Handle]):
    """The policy of `config` (or `policy`, one of your own) steering an engine read through
    `view`; `fallback` says who schedules a step the policy does not (for the log)."""

    def __init__(
        self,
        config: AdapterConfig,
        view: EngineView[Handle],
        *,
        fallback: str,
        policy: Policy[Any] | None = None,
        metrics: StepMetrics | None = None,
        clock: Clock | None = None,
        refit_aside: bool = True,
    ) -> None:
        self.config = config
        self.view = view
        self.policy: Policy[Any] = config.build_policy() if policy is None else policy
        self.pstate: Any = self.policy.init()
        if isinstance(self.policy, Online):
            load_solver()
        self.clock = Clock() if clock is None else clock
        self.throughput = config.prefill_throughput
        """ρ_t: the prefill tokens per second of the recent measured steps."""
        self.faults: Counter[str] = Counter()
        """Steps the engine scheduled itself, refused requests and observe errors, by kind."""
        self.decision: Decision | None = None
        """The last step's decision, for logs and tests."""
        self.steps = 0
        """Steps the engine ran (as planned or scheduled itself)."""
        self.cancelled = 0
        """Requests cancelled because their client left."""
        self.given_up = 0
        """Requests the policy gave up on (`give_up_after`)."""
        self.met = 0
        """Requests met in the snapshots so far (a report's `met`)."""
        self.to_finish: dict[str, str] = {}
        """Requests to finish alone (refused or given up), by id, with the client's notice."""
        self._fallback = fallback
        self._metrics = metrics
        self._known: dict[str, _Known[Handle]] = {}
        self._kept = 0
        self._pending: deque[PendingStep] = deque()
        self._last_done = 0.0
        self._trace = TraceWriter(config.trace) if config.trace is not None else None
        learns = isinstance(self.policy, Online)
        self._refits = Refits() if learns and refit_aside else None
        self._unpriced: LatencyPredictor | None = None
        """The configured predictor, read once, for the reports of a policy that prices
        nothing itself."""

    def decide(self, engine_budget: int) -> Decision:
        """This step's decision, the engine holding at most `engine_budget` tokens a step."""
        decision = self.decision = self._decide(min(self.policy.token_budget, engine_budget))
        if decision.given_up:
            new = decision.given_up.keys() - self.to_finish.keys()
            self.to_finish.update(decision.given_up)
            self.given_up += len(new)
            if self._metrics is not None:
                self._metrics.given_up(len(new))
        if self._metrics is not None:
            self._metrics.decided(self.policy, decision, self.faults, self._known.__contains__)
        return decision

    def take_finished(self) -> dict[str, str]:
        """The requests to finish alone now, with their notices; the loop forgets them."""
        taken, self.to_finish = self.to_finish, {}
        for rid in taken:
            self._known.pop(rid, None)
        return taken

    def started(self, decision: Decision, scheduled: Mapping[str, int], key: object = None) -> None:
        """The engine starts the step of `decision`, running `scheduled` (request id →
        tokens); `key` is its own object for the step, which `finished` names."""
        self.steps += 1
        self._pending.append(PendingStep(key, decision, dict(scheduled), self.clock.now()))

    def finished(self, key: object = None, done: float | None = None) -> None:
        """The output of the step `key` (None: the oldest in flight) has been applied, at
        `done` on the loop's clock (default: now); steps started before it whose output
        never came are traced without a time. Its time is measured from its start, or from
        the end of the step before when steps overlap."""
        done = self.clock.now() if done is None else done
        pending = self._pending
        while key is not None and pending and pending[0].key is not key:
            self._trace_step(pending.popleft(), None)
        if not pending:
            return
        step = pending.popleft()
        latency = done - max(step.started, self._last_done)
        self._last_done = done
        self._trace_step(step, latency)
        state = step.decision.state
        if state is None or not step.scheduled:
            return
        executed, prefill = executed_plan(state, step.decision.plan, step.scheduled)
        if self._metrics is not None:
            self._metrics.observed(step.decision, state, executed, latency, self.pstate)
        self.throughput = next_throughput(self.throughput, prefill, latency)
        try:
            self._observe(state, executed, latency)
        except Exception as error:
            self.fault(f"observe raised {type(error).__name__}", error)

    def _observe(self, state: SchedulerState, executed: BatchPlan, latency: float) -> None:
        """The policy observes the step; a learner's refits run aside (`refits.Refits`)."""
        policy = self.policy
        if self._refits is None or not isinstance(policy, Online):
            self.pstate = policy.observe(self.pstate, state, executed, latency)
        else:
            self.pstate = self._refits.observe(policy, self.pstate, state, executed, latency)

    def forget(self, request_id: str, *, cancelled: bool = False) -> None:
        """The engine finished the request, or cancelled it because its client left (said
        once for each such request: it is counted)."""
        self._known.pop(request_id, None)
        if cancelled:
            self.cancelled += 1
            if self._metrics is not None:
                self._metrics.cancelled(1)

    def restart(self) -> None:
        """The engine dropped every request and step (it restarted its loop): forget them;
        the steps in flight are traced without a time."""
        while self._pending:
            self._trace_step(self._pending.popleft(), None)
        self._known.clear()
        self.to_finish.clear()

    def close(self) -> None:
        """Trace the steps whose output never came (latency null), close the trace, and end
        the refit thread."""
        while self._pending:
            self._trace_step(self._pending.popleft(), None)
        if self._trace is not None:
            self._trace.close()
            self._trace = None
        if self._refits is not None:
            self._refits.close()
            self._refits = None

    def fault(self, kind: str, detail: object) -> None:
        """Count a fault; log the first of each kind."""
        self.faults[kind] += 1
        if self.faults[kind] == 1:
            logger.warning(
                "slidingpolicy: %s (%s); %s; later ones are counted in the faults, not logged",
                kind,
                detail,
                self._fallback,
            )

    def report(self, free_at: float | None = None) -> ReplicaReport:
        """What this replica tells a router (`slidingpolicy.routing.report_from`): the last
        step's snapshot less the requests the engine no longer holds, made at that snapshot's
        time (its next step at `free_at`, default then), priced by the predictor the policy
        plans with now within that step's budget, with the requests met so far; before the
        first snapshot, an idle replica's, made now. It reads only the last decision, so an
        engine's own thread may keep stepping meanwhile."""
        decision = self.decision
        state = decision.state if decision is not None else None
        learned = getattr(self.pstate, "predictor", getattr(self.policy, "predictor", None))
        if not isinstance(learned, LatencyPredictor):
            if self._unpriced is None:
                self._unpriced = self.config.load_predictor()
            learned = self._unpriced
        if decision is None or state is None:
            now = self.clock.now()
            start = now if free_at is None else max(free_at, now)
            budget = max(self.policy.token_budget, 2)
            return report_from(now, start, [], [], learned, budget, self.met)
        live = self.view.live
        decoding = [r for r in state.decoding if live(r.id)]
        queued = [r for r in state.prefill_candidates if live(r.id)]
        start = state.now if free_at is None else max(free_at, state.now)
        budget = max(decision.budget, 2)
        return report_from(state.now, start, decoding, queued, learned, budget, self.met)

    def _decide(self, budget: int) -> Decision:
        """Snapshot, plan, check; any failure becomes a fallback with its reason."""
        try:
            state, handles = self._snapshot(self.clock.now())
        except Exception as error:
            return self._fell_back(Decision(None, None, None, budget), "snapshot raised", error)
        try:
            plan, pstate = self.policy.plan(self.pstate, state)
        except Exception as error:
            return self._fell_back(
                Decision(state, None, None, budget, handles), "policy raised", error
            )
        if self.config.check_plans:
            violations = check_plan(state, plan, token_budget=budget)
            if violations:
                reason = f"plan breaks invariant {violations[0].invariant}"
                self.fault(reason, "; ".join(map(str, violations)))
                return Decision(state, plan, reason, budget, handles)
        self.pstate = pstate
        notices = given_up_notice(state, plan.given_up) if plan.given_up else {}
        return Decision(state, plan, None, budget, handles, notices)

    def _fell_back(self, decision: Decision, what: str, error: Exception) -> Decision:
        reason = f"{what} {type(error).__name__}"
        self.fault(reason, error)
        return attrs.evolve(decision, fallback=reason)

    def _snapshot(self, now: float) -> tuple[SchedulerState, dict[str, Handle]]:
        """Every request the engine could schedule now as a record (carried over from the
        last step unless its counts changed), and their handles by id; a request whose
        record cannot be made is refused alone."""
        view, known, default = self.view, self._known, self.config.default_slo
        if len(known) > 2 * self._kept + 64:
            self._known = known = {rid: k for rid, k in known.items() if view.live(rid)}
            self._kept = len(known)
        requests: list[Request] = []
        handles: dict[str, Handle] = {}
        engine_now: float | None = None
        for rid, handle in view.candidates():
            if rid in self.to_finish:
                continue
            seen = known.get(rid)
            try:
                if seen is None or seen.handle is not handle:
                    engine_now = view.clock() if engine_now is None else engine_now
                    arrival = Clock.arrival(now, engine_now - view.stamp(handle))
                    seen = known[rid] = _Known(handle, view.slo(handle, default), arrival)
                    self.met += 1
                record = seen.record = view.record(handle, seen.slo, seen.arrival, seen.record)
            except InvalidRecordError as error:
                self._refuse(rid, error)
                continue
            if record is not None:
                requests.append(record)
                handles[rid] = handle
        return SchedulerState(now, tuple(requests), self.throughput), handles

    def _refuse(self, request_id: str, error: InvalidRecordError) -> None:
        """Leave a request the policy cannot represent out of every plan, to be finished
        alone with the reason; counted, the first one logged."""
        why = self.to_finish[request_id] = refused_notice(request_id, error)
        self._known.pop(request_id, None)
        self.faults[REFUSED] += 1
        if self.faults[REFUSED] == 1:
            logger.warning(
                "slidingpolicy: %s; it is finished alone, the other requests keep the policy "
                "(later ones are counted in the faults, not logged)",
                why,
            )

    def _trace_step(self, step: PendingStep, latency: float | None) -> None:
        """Trace a step that had a snapshot, with its measured time (None: never measured)."""
        state = step.decision.state
        if self._trace is None or state is None:
            return
        ran = tuple(Allocation(rid, tokens) for rid, tokens in step.scheduled.items())
        decision = step.decision
        line = TraceStep(state, decision.plan, decision.budget, ran, decision.fallback, latency)
        self._trace.write(line)
