"""A policy that does not observe decode runs at once observes each of their iterations."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slidingpolicy.engine import EngineOptions, simulate
from slidingpolicy.engine.observation import observe_decode_run
from slidingpolicy.policies import by_name, names
from slidingpolicy.policy import DecodeRunObserver
from slidingpolicy.records.plan import Allocation, BatchPlan
from slidingpolicy.records.request import Request
from slidingpolicy.records.state import SchedulerState
from slidingpolicy.workloads import Poisson, make_workload
from tests.engine.conftest import HARDWARE, Fcfs, hardware, predictor

Seen = tuple[Any, ...]


def seen(state: SchedulerState, plan: BatchPlan, latency: float) -> Seen:
    """Everything a policy could learn from one observation."""
    requests = tuple(
        (r.id, r.arrival, r.prompt_tokens, r.prefilled, r.generated, r.deadline)
        for r in state.requests
    )
    tokens = tuple(sorted(plan.tokens_of().items()))
    return (state.now, requests, state.prefill_throughput, state.kv_free_tokens, tokens, latency)


@attrs.frozen(slots=True)
class Stepwise:
    """FCFS that keeps every observation and has no `observe_decodes`."""

    inner: Fcfs = attrs.field(factory=Fcfs)
    name: str = "stepwise"
    token_budget: int = 256

    def init(self) -> tuple[Seen, ...]:
        return ()

    def plan(self, pstate: Any, state: SchedulerState) -> tuple[BatchPlan, Any]:
        plan, _ = self.inner.plan(self.inner.init(), state)
        return plan, pstate

    def observe(
        self, pstate: Any, state: SchedulerState, plan: BatchPlan, latency: float
    ) -> tuple[Seen, ...]:
        return (*pstate, seen(state, plan, latency))


@attrs.frozen(slots=True)
class Hidden:
    """A policy with its `observe_decodes` hidden: only `observe` is offered."""

    inner: Any

    @property
    def name(self) -> str:
        return str(self.inner.name)

    @property
    def token_budget(self) -> int:
        return int(self.inner.token_budget)

    def init(self) -> Any:
        return self.inner.init()

    def plan(self, pstate: Any, state: SchedulerState) -> tuple[BatchPlan, Any]:
        result: tuple[BatchPlan, Any] = self.inner.plan(pstate, state)
        return result

    def observe(self, pstate: Any, state: SchedulerState, plan: BatchPlan, latency: float) -> Any:
        return self.inner.observe(pstate, state, plan, latency)


decode_sets = st.lists(
    st.tuples(st.integers(1, 4000), st.integers(1, 300), st.floats(0.0, 5.0)),
    min_size=1,
    max_size=8,
)
latency_lists = st.lists(st.floats(0.001, 0.2), min_size=1, max_size=10)


def decoding(specs: Sequence[tuple[int, int, float]]) -> list[Request]:
    return [Request(f"d{k}", a, p, p, g, 1.0, 0.05) for k, (p, g, a) in enumerate(specs)]


def test_the_stepwise_policies_are_not_decode_run_observers() -> None:
    assert not isinstance(Stepwise(), DecodeRunObserver)
    assert not isinstance(Hidden(Fcfs()), DecodeRunObserver)
    assert isinstance(Fcfs(), DecodeRunObserver)


@settings(max_examples=60, deadline=None)
@given(decode_sets, latency_lists, st.floats(0.0, 10.0), st.integers(0, 10**6))
def test_a_policy_without_observe_decodes_observes_every_iteration(
    specs: list[tuple[int, int, float]], latencies: list[float], after: float, free: int
) -> None:
    decodes = decoding(specs)
    start = max(d.arrival for d in decodes) + after
    frees = [free + j for j in range(len(latencies))]
    got = observe_decode_run(Stepwise(), (), decodes, latencies, start, 900.0, frees)
    expected: list[Seen] = []
    now = start
    for j, latency in enumerate(latencies):
        requests = tuple(
            Request(d.id, d.arrival, d.prompt_tokens, d.prefilled, d.generated + j, 1.0, 0.05)
            for d in decodes
        )
        state = SchedulerState(now, requests, 900.0, frees[j])
        every_decode_one_token = BatchPlan(
            tuple(Allocation(d.id, 1) for d in decodes), "whole", "", 0, 0.0
        )
        expected.append(seen(state, every_decode_one_token, latency))
        now += latency
    assert got == tuple(expected)


@pytest.mark.parametrize("name", names())
@settings(max_examples=15, deadline=None)
@given(decode_sets, latency_lists)
def test_observing_each_iteration_equals_a_policys_observe_decodes(
    name: str, specs: list[tuple[int, int, float]], latencies: list[float]
) -> None:
    policy = by_name(name, predictor(*HARDWARE[0]))
    decodes = decoding(specs)
    start = max(d.arrival for d in decodes)
    pstate = policy.init()
    batched = observe_decode_run(policy, pstate, decodes, latencies, start, 900.0)
    stepped = observe_decode_run(Hidden(policy), pstate, decodes, latencies, start, 900.0)
    assert repr(batched) == repr(stepped)


@pytest.mark.parametrize("kv", [None, 12000])
def test_a_run_of_a_policy_without_observe_decodes_observes_what_stepping_shows(
    kv: int | None,
) -> None:
    workload = make_workload("mixed-v1", 60, Poisson(1.5), 2)
    runs = [
        simulate(
            Stepwise(),
            workload,
            hardware(*HARDWARE[0]),
            2,
            EngineOptions(strict=True, closed_form=closed_form, kv_capacity_tokens=kv),
        )
        for closed_form in (True, False)
    ]
    assert runs[0].stats.decode_runs > 0
    assert runs[0].metrics == runs[1].metrics
    assert len(runs[0].policy_state) == runs[0].metrics.iterations
    assert runs[0].policy_state == runs[1].policy_state
