"""The test kit (`slidingpolicy.testing`) on policies written outside the repository: a correct
one passes; one that over-allocates, one that changes its input, one that is not
deterministic and one that never serves a prefill each fail, with the property named. Our own
policies pass it too (tests/policies/test_invariants.py)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from slidingpolicy import SchedulerState
from slidingpolicy.policies import plugin_loader, registry
from slidingpolicy.testing import PolicyCheckError, Property, check_policy, check_run
from slidingpolicy.testing.strategies import pressed_states
from tests.cli.conftest import run_cli

OUTSIDE = '''
"""Policies a user wrote: a correct one, and one for each mistake the kit must catch."""

import attrs

from slidingpolicy import Allocation, BatchPlan, PlanBranch


@attrs.frozen
class Greedy:
    """Decodes first (oldest first), then prefills in arrival order, up to the budget."""

    name: str = "outside"
    token_budget: int = 512

    def init(self):
        return ()

    def room(self, state):
        kv = state.kv_free_tokens
        return self.token_budget if kv is None else min(self.token_budget, kv)

    def prefill(self, request, room):
        return min(request.remaining_prefill, room)

    def plan(self, pstate, state):
        kv, room = state.kv_free_tokens, self.room(state)
        decodes = sorted(state.decoding, key=lambda r: (r.arrival, r.id))
        batch = [Allocation(r.id, 1) for r in decodes[:room]]
        left_out = tuple(r.id for r in decodes[room:])
        decoded = len(batch)
        room -= decoded
        for request in sorted(state.prefill_candidates, key=lambda r: (r.arrival, r.id)):
            tokens = self.prefill(request, room)
            if tokens == 0:
                break
            batch.append(Allocation(request.id, tokens))
            room -= tokens
        short_of_kv = kv is not None and kv < self.token_budget
        plan = BatchPlan(
            tuple(batch),
            PlanBranch.WHOLE if batch else PlanBranch.IDLE,
            self.name,
            prefill_budget=sum(a.tokens for a in batch[decoded:]),
            predicted_latency=self.latency(),
            preempted=left_out if short_of_kv else (),
            deferred=() if short_of_kv else left_out,
        )
        return plan, pstate

    def latency(self):
        return 0.0

    def observe(self, pstate, state, plan, latency):
        return pstate


class OverBudget(Greedy):
    """Fills twice its declared budget (within the free KV slots)."""

    def room(self, state):
        kv = state.kv_free_tokens
        return 2 * self.token_budget if kv is None else min(2 * self.token_budget, kv)


class Remembers(Greedy):
    """Remembers the plans it made by appending to the policy state it was given."""

    def init(self):
        return []

    def plan(self, pstate, state):
        plan, _ = super().plan(pstate, state)
        pstate.append(plan)
        return plan, pstate


class Tidies(Greedy):
    """Moves the state's clock on to when the batch will end."""

    def plan(self, pstate, state):
        plan, pstate = super().plan(pstate, state)
        object.__setattr__(state, "now", state.now + 0.01)
        return plan, pstate


@attrs.frozen
class Counts(Greedy):
    """Counts its calls outside its policy state, and predicts from the count."""

    calls: list = attrs.field(factory=list)

    def latency(self):
        self.calls.append(1)
        return 1e-3 * len(self.calls)


class Lazy(Greedy):
    """Runs decodes, never a prefill."""

    def prefill(self, request, room):
        return 0
'''


@pytest.fixture(scope="module")
def outside(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    """The policies above, written to a file outside the repository and imported from it."""
    path = tmp_path_factory.mktemp("user") / "outside_policies.py"
    path.write_text(OUTSIDE)
    spec = importlib.util.spec_from_file_location("outside_policies", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def policy(module: ModuleType, kind: str) -> Any:
    return getattr(module, kind)()


def test_a_correct_policy_passes(outside: ModuleType) -> None:
    check_policy(policy(outside, "Greedy"))


@pytest.mark.parametrize(
    ("kind", "broken", "needle"),
    [
        ("OverBudget", Property.BUDGET, "tokens exceed the token budget 512"),
        ("Remembers", Property.PURITY, "plan changed the policy state it was given"),
        ("Tidies", Property.PURITY, "plan changed the state it was given"),
        ("Counts", Property.DETERMINISM, "invariant 8: the same (pstate, state) gave two plans"),
    ],
)
def test_a_broken_policy_fails_naming_the_property(
    outside: ModuleType, kind: str, broken: Property, needle: str
) -> None:
    with pytest.raises(PolicyCheckError) as failure:
        check_policy(policy(outside, kind), examples=60, shrink=False)
    assert failure.value.broken is broken
    assert str(failure.value).startswith(f"policy 'outside' breaks {broken}: ")
    assert needle in str(failure.value)


def test_a_policy_that_serves_no_prefill_fails_the_simulated_run(outside: ModuleType) -> None:
    with pytest.raises(PolicyCheckError, match="breaks a simulated run: stalled") as failure:
        check_policy(policy(outside, "Lazy"), examples=5, requests=10)
    assert failure.value.broken is Property.RUN


def test_a_plan_the_engine_checks_fails_the_simulated_run_with_its_invariant(
    outside: ModuleType,
) -> None:
    with pytest.raises(PolicyCheckError) as failure:
        check_run(policy(outside, "OverBudget"), requests=20)
    assert failure.value.broken is Property.RUN
    assert "invariant 4" in str(failure.value)


@pytest.mark.parametrize(("flag", "code"), [((), 2), (("--strict",), 2), (("--no-strict",), 0)])
def test_the_command_line_refuses_its_plans_unless_told_not_to_check(
    flag: tuple[str, ...],
    code: int,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A policy of your own is checked by default: the over-budget one stops the run at its
    first plan over the budget, naming the invariant (exit 2); --no-strict runs it."""
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    monkeypatch.setattr(plugin_loader, "_LOADED", set())
    plugin = tmp_path / "over.py"
    plugin.write_text(
        OUTSIDE + "\nfrom slidingpolicy import register\n"
        "register('outside', lambda predictor: OverBudget())\n"
    )
    args = ["simulate", "--plugin", str(plugin), "-p", "outside", "-n", "20", *flag]
    done, _, err = run_cli([*args, "-o", str(tmp_path / "out")], capsys)
    assert done == code, err
    if code:
        assert err.startswith("slidingpolicy: error: policy 'outside' at t=")
        assert "broke invariant 4: " in err
        assert "tokens exceed the token budget 512" in err


@pytest.mark.parametrize(
    ("budget", "needle"), [(0, "got 0"), (2.5, "got 2.5"), ("512", "got '512'")]
)
def test_a_budget_that_is_not_a_count_of_tokens_fails_at_once(
    outside: ModuleType, budget: object, needle: str
) -> None:
    with pytest.raises(PolicyCheckError, match=f"breaks the token budget: .*{needle}"):
        check_policy(outside.Greedy(token_budget=budget), examples=1)


def test_the_states_it_draws_can_be_the_authors_own(outside: ModuleType) -> None:
    seen: list[SchedulerState] = []

    def kept(state: SchedulerState) -> SchedulerState:
        seen.append(state)
        return state

    states = pressed_states().map(kept)
    check_policy(policy(outside, "Greedy"), examples=5, states=states, requests=10)
    assert seen
    assert all(s.prefill_candidates for s in seen)
