"""The policy's loop, apart from any engine: the timing of overlapping steps, a step whose
output never came, an observe that raises, the book of requests kept bounded, and the trace
that records the budget each plan was checked against."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import attrs
import pytest

from slidingpolicy import BatchPlan, Request, SchedulerState, Slo
from slidingpolicy.embedding import AdapterConfig, Clock, PolicyLoop
from slidingpolicy.routing import ReplicaReport
from slidingpolicy.step_trace import parse_step


@attrs.define
class Queue:
    """An engine view of waiting requests (id → prompt tokens), each its own handle."""

    prompts: dict[str, int]
    gone: set[str] = attrs.field(factory=set)

    def candidates(self) -> Iterable[tuple[str, Any]]:
        return [(rid, rid) for rid in self.prompts if rid not in self.gone]

    def slo(self, handle: Any, default: Slo) -> Slo:
        return default

    def stamp(self, handle: Any) -> float:
        return 0.0

    def clock(self) -> float:
        return 0.0

    def record(self, handle: Any, slo: Slo, arrival: float, known: Request | None) -> Request:
        return Request(handle, arrival, self.prompts[handle], 0, 0, slo.ttft, slo.tbt)

    def live(self, request_id: str) -> bool:
        return request_id not in self.gone


class Ticks:
    """A clock read that advances by a given step each time."""

    def __init__(self, *steps: float) -> None:
        self.now, self.steps = 0.0, list(steps)

    def __call__(self) -> float:
        if self.steps:
            self.now += self.steps.pop(0)
        return self.now


def _loop(view: Queue, clock: Clock | None = None, **config: Any) -> PolicyLoop[Any]:
    settings = AdapterConfig.from_mapping({"policy": "sarathi[token_budget=64]", **config})
    return PolicyLoop(settings, view, fallback="the test schedules such steps", clock=clock)


def test_overlapping_steps_are_timed_from_the_end_of_the_one_before(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    # the epoch, decide, start A at 1, decide, start B at 2, A done at 4, B done at 5
    clock = Clock(Ticks(0.0, 0.0, 1.0, 0.5, 0.5, 2.0, 1.0))
    loop = _loop(Queue({"a": 40, "b": 40}), clock, trace=str(trace))
    first = loop.decide(64)
    loop.started(first, {"a": 40}, "A")
    second = loop.decide(64)
    loop.started(second, {"b": 24}, "B")
    loop.finished("A")
    loop.finished("B")
    loop.close()
    latencies = [parse_step(line).latency for line in trace.read_text().splitlines()]
    assert latencies == [3.0, 1.0]


def test_a_step_whose_output_never_came_is_traced_without_a_time(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    loop = _loop(Queue({"a": 40}), trace=str(trace))
    decision = loop.decide(64)
    loop.started(decision, {"a": 40}, "lost")
    loop.started(decision, {"a": 40}, "kept")
    loop.finished("kept")
    loop.started(decision, {"a": 40}, "cut")
    loop.close()
    latencies = [parse_step(line).latency for line in trace.read_text().splitlines()]
    assert latencies[0] is None
    assert latencies[1] is not None
    assert latencies[2] is None


def test_the_trace_records_the_budget_the_plan_was_checked_against(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    loop = _loop(Queue({"a": 400}), trace=str(trace))
    decision = loop.decide(32)
    assert decision.fallback == "plan breaks invariant 4"
    assert decision.planned is None
    loop.started(decision, {"a": 32})
    loop.finished()
    loop.close()
    assert parse_step(trace.read_text()).token_budget == 32


def test_an_observe_that_raises_is_a_fault_and_the_loop_goes_on() -> None:
    loop = _loop(Queue({"a": 40}))

    @attrs.define
    class Raising:
        inner: Any

        name = "raising"
        token_budget = 64

        def init(self) -> Any:
            return self.inner.init()

        def plan(self, pstate: Any, state: SchedulerState) -> tuple[BatchPlan, Any]:
            plan, pstate = self.inner.plan(pstate, state)
            return plan, pstate

        def observe(self, pstate: Any, state: SchedulerState, plan: BatchPlan, t: float) -> Any:
            raise RuntimeError("learner bug")

    loop.policy = Raising(loop.policy)
    for _ in range(2):
        decision = loop.decide(64)
        loop.started(decision, {"a": 40})
        loop.finished()
    assert loop.faults == {"observe raised RuntimeError": 2}
    assert loop.decision is not None
    assert loop.decision.fallback is None


def test_the_book_of_requests_drops_those_the_engine_no_longer_holds() -> None:
    view = Queue({f"r{i}": 10 for i in range(200)})
    loop = _loop(view)
    loop.decide(64)
    assert len(loop._known) == 200
    view.gone |= {f"r{i}" for i in range(199)}
    loop.decide(64)
    assert set(loop._known) == {"r199"}


def test_a_request_forgotten_as_cancelled_is_counted_and_forgotten() -> None:
    loop = _loop(Queue({"a": 10, "b": 10}))
    loop.decide(64)
    loop.forget("a", cancelled=True)
    loop.forget("b")
    assert loop.cancelled == 1
    assert loop._known == {}


def _solver_loaded(policy: str) -> bool:
    """Whether a fresh process that builds a loop of `policy` has scipy's solver loaded."""
    source = (
        "import sys\n"
        "from slidingpolicy.embedding import AdapterConfig, PolicyLoop\n"
        "from slidingpolicy.testing.fake_engine import FakeView\n"
        f"PolicyLoop(AdapterConfig(policy={policy!r}), FakeView(None), fallback='')\n"
        "print('scipy.optimize' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", source], capture_output=True, text=True, check=True
    )
    return done.stdout.strip() == "True"


def test_a_learning_policy_loads_its_solver_when_the_loop_starts() -> None:
    """It failed before: the first full refit imported scipy inside a step (1 to 1.5 s here)."""
    assert _solver_loaded("slidingserve+")
    assert not _solver_loaded("sarathi")


def test_requests_met_in_one_snapshot_keep_the_order_the_engine_stamped_them_in() -> None:
    """Each age read against a reading of the engine's clock of its own (the rule before),
    so two requests stamped alike arrived a few µs apart, in the order the loop met them,
    which flipped vLLM's preemption order in tests/test_isolation.py."""

    @attrs.define
    class Stamped(Queue):
        stamps: dict[str, float] = attrs.field(factory=dict)
        readings: int = 0

        def stamp(self, handle: Any) -> float:
            return self.stamps[handle]

        def clock(self) -> float:
            self.readings += 1
            return 100.0 + 1e-6 * self.readings

    view = Stamped({"a": 10, "b": 10, "c": 10}, stamps={"a": 99.0, "b": 99.0, "c": 99.5})
    loop = _loop(view, Clock(Ticks(0.0, 5.0)))
    decision = loop.decide(64)
    assert decision.state is not None
    arrivals = {r.id: r.arrival for r in decision.state.requests}
    assert arrivals["a"] == arrivals["b"] < arrivals["c"]
    assert view.readings == 1


def test_a_restart_forgets_the_requests_and_traces_the_steps_in_flight(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    loop = _loop(Queue({"a": 40}), trace=str(trace))
    decision = loop.decide(64)
    loop.started(decision, {"a": 40})
    loop.restart()
    loop.finished()
    loop.close()
    assert loop._known == {}
    assert [parse_step(line).latency for line in trace.read_text().splitlines()] == [None]


def _learning_run(monkeypatch: pytest.MonkeyPatch, fit_delay: float = 0.0) -> dict[str, Any]:
    """A fake engine under `slidingserve+` learning fast (warm-up 4, refit every 4), each
    refit's fit slowed by `fit_delay` seconds of wall time: the observations at which
    refits fell due, were fitted (with the thread's name) and put in force, and the plans."""
    from slidingpolicy.embedding import refits as refits_module
    from slidingpolicy.policies import learner as learning
    from slidingpolicy.policies.online import Online
    from slidingpolicy.testing.fake_engine import FakeEngine

    engine = FakeEngine({"policy": "slidingserve+[warmup=4,refit_every=4]"})
    seen: dict[str, Any] = {"due": [], "handed": [], "fits": [], "installed": [], "plans": []}
    real_refitted, real_deferring = learning.refitted, Online.observe_deferring
    real_hand_over, real_install = Online.hand_over, Online.install

    def observations() -> int:
        refits = engine.loop._refits
        assert refits is not None
        return refits.observations

    def refitted(learner: Any, config: Any) -> Any:
        time.sleep(fit_delay)
        refit = real_refitted(learner, config)
        seen["fits"].append((threading.current_thread().name, refit.predictor))
        return refit

    def deferring(self: Any, *args: Any) -> Any:
        pstate, due = real_deferring(self, *args)
        if due:
            seen["due"].append(observations())
        return pstate, due

    def hand_over(self: Any, pstate: Any) -> Any:
        pstate, handed = real_hand_over(self, pstate)
        seen["handed"].append((observations(), handed.priced))
        return pstate, handed

    def install(self: Any, pstate: Any, refit: Any) -> Any:
        seen["installed"].append((observations(), refit.predictor))
        return real_install(self, pstate, refit)

    with monkeypatch.context() as patched:
        patched.setattr(refits_module, "refitted", refitted)
        patched.setattr(Online, "observe_deferring", deferring)
        patched.setattr(Online, "hand_over", hand_over)
        patched.setattr(Online, "install", install)
        for i in range(40):
            engine.add(f"r{i}", 300 + 50 * (i % 7), 6)
            engine.step()
            seen["plans"].append(engine.loop.decision and engine.loop.decision.planned)
        while not engine.idle():
            engine.step()
            seen["plans"].append(engine.loop.decision and engine.loop.decision.planned)
        engine.loop.close()
    assert engine.loop.faults == {}
    return seen


def test_refits_run_aside_and_are_in_force_a_fixed_lag_after_they_were_asked_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every refit is folded and fitted on the refit thread and put in force a fixed number
    of observations after it was handed over (the warm-up's at the next, a full one
    `REFIT_LAG` later): handed over when it fell due, or, if one was out then, when that
    one was put in force."""
    from slidingpolicy.embedding.refits import REFIT_LAG

    seen = _learning_run(monkeypatch)
    due, handed, fits, installed = seen["due"], seen["handed"], seen["fits"], seen["installed"]
    assert len(installed) >= 3
    assert {name for name, _ in fits} == {"slidingpolicy-refit_0"}
    warmup = 4
    expected: list[int] = []
    in_force_at, asked = 0, False
    for at in range(1, max(due) + 1):
        out = bool(expected) and at < in_force_at
        asked = asked or at in due
        if asked and not out:
            expected.append(at)
            priced = dict(handed)[at]
            in_force_at, asked = at + (1 if priced < warmup else REFIT_LAG), False
    assert [at for at, _ in handed][: len(expected)] == expected
    lags = [at + (1 if priced < warmup else REFIT_LAG) for at, priced in handed]
    assert [at for at, _ in installed] == lags[: len(installed)]
    assert [p for _, p in installed] == [p for _, p in fits][: len(installed)]


def test_the_plans_do_not_depend_on_the_refit_threads_timing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A refit thread 20 ms slower per fit changes no plan: each refit is put in force at
    the same observation, waited for if it is not done."""
    quick = _learning_run(monkeypatch)
    slow = _learning_run(monkeypatch, fit_delay=0.02)
    assert [at for at, _ in quick["installed"]] == [at for at, _ in slow["installed"]]
    assert quick["plans"] == slow["plans"]


def test_a_report_is_idle_before_a_snapshot_then_the_last_one_less_the_requests_gone() -> None:
    view = Queue({"a": 40, "b": 30})
    loop = _loop(view, Clock(Ticks(0.0, 0.25, 0.25)))
    idle = loop.report()
    assert (idle.made_at, idle.queued, idle.decoding, idle.ahead, idle.met) == (0.25, 0, 0, (), 0)
    assert idle.prefill_rate > 0.0
    loop.decide(64)
    view.gone.add("b")
    report = loop.report()
    assert (report.made_at, report.free_at) == (0.5, 0.5)
    assert (report.queued, report.queued_tokens, report.decoding) == (1, 40, 0)
    assert report.met == 2
    view.prompts["c"] = 10
    loop.decide(64)
    assert loop.report().met == 3
    assert report.prefill_rate > 0.0
    assert ReplicaReport.from_dict(report.to_dict()) == report
    assert loop.report(free_at=0.75).free_at == 0.75


@attrs.frozen
class _Unpriced:
    """A policy of one's own that prices nothing (it has no predictor): it plans nothing."""

    name: str = "unpriced"
    token_budget: int = 64

    def init(self) -> None:
        return None

    def plan(self, pstate: None, state: SchedulerState) -> tuple[BatchPlan, None]:
        return BatchPlan((), "idle", self.name, 0, 0.0), None

    def observe(self, pstate: None, state: SchedulerState, plan: BatchPlan, latency: float) -> None:
        return None

    def observe_decodes(self, pstate: None, decodes: Iterable[Request], latencies: Any) -> None:
        return None


def test_a_policy_that_prices_nothing_reports_by_the_configured_predictor_read_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reads: list[object] = []
    real = AdapterConfig.load_predictor

    def load(self: AdapterConfig) -> Any:
        reads.append(self)
        return real(self)

    monkeypatch.setattr(AdapterConfig, "load_predictor", load)
    settings = AdapterConfig.from_mapping({"policy": "sarathi"})
    loop = PolicyLoop(settings, Queue({"a": 40}), fallback="test", policy=_Unpriced())
    reads.clear()
    first = loop.report()
    loop.decide(64)
    second = loop.report()
    assert len(reads) == 1
    assert first.prefill_rate == second.prefill_rate > 0.0
    assert second.queued_tokens == 40
    assert loop.faults == {}
