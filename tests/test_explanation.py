"""`explain` presents the decision the policy makes, and only that: its plan is the policy's
plan, each step's numbers are the ones that plan came from, and it runs no stage of the
policy (it reads `SlidingServe.decide`'s record); the built-in examples are the README's and
the docs' states."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import runpy
from pathlib import Path
from types import FunctionType
from typing import NoReturn

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import slidingpolicy.stages
from slidingpolicy import SchedulerState, SlidingServe, default_predictor
from slidingpolicy.examples import readme, scene
from slidingpolicy.explanation import Explanation, explain, sliding_of
from slidingpolicy.policies import by_name
from slidingpolicy.pricing.model import LatencyPredictor
from slidingpolicy.records.plan import BatchPlan, PlanBranch
from slidingpolicy.records.request import Request
from slidingpolicy.records.sliding_config import SlidingConfig
from slidingpolicy.testing.strategies import configs, pressed_states, realistic_predictors, states

ROOT = Path(__file__).resolve().parents[1]


def _prefills(plan: BatchPlan, found: Explanation) -> dict[str, int]:
    return {rid: c for rid, c in plan.tokens_of().items() if rid not in found.decodes}


@settings(max_examples=60, deadline=None)
@given(st.one_of(states(), pressed_states()), realistic_predictors(), configs())
def test_the_explained_plan_is_the_policys_and_its_steps_agree_with_it(
    state: SchedulerState, predictor: LatencyPredictor, config: SlidingConfig
) -> None:
    policy = SlidingServe(predictor, config)
    found = explain(policy, state)
    plan, _ = policy.plan(policy.init(), state)
    assert found.plan == plan
    prefills = _prefills(plan, found)
    best = [w for w in found.anchors if w.best]
    if plan.branch == PlanBranch.CONSTRUCTOR:
        (chosen,) = best
        assert chosen.anchor == plan.diagnostics.anchor
        assert set(chosen.chosen) == set(prefills)
        assert found.risky == plan.diagnostics.risky
        assert not found.handover
    else:
        assert not best
        assert found.handover
    if found.split is not None:
        assert plan.branch == PlanBranch.CHUNKER
        assert found.split.chosen == sum(prefills.values())
        assert found.split.budget_sum == plan.diagnostics.budget_sum
        order = [r.request.id for r in found.order]
        assert list(prefills) == order[: len(prefills)]
    assert [r.request.id for r in found.order][: len(found.candidate)] == list(found.candidate)


@settings(max_examples=40, deadline=None)
@given(st.one_of(states(), pressed_states()), configs())
def test_the_record_ranks_the_drafts_queue_and_names_the_decodes_that_set_the_window(
    state: SchedulerState, config: SlidingConfig
) -> None:
    policy = SlidingServe(default_predictor(), config)
    decision = policy.decide(state)
    draft = decision.draft
    assert decision.plan == policy.plan(policy.init(), state)[0]
    assert [r.request for r in decision.ranks] == list(draft.queue)
    assert len(decision.binders) == len(draft.horizon)
    decodes = {d.id: d for d in draft.admission.decodes}
    for j, (rid, w) in enumerate(zip(decision.binders, draft.horizon, strict=True)):
        d = decodes[rid]
        assert d.deadline - draft.now + j * d.tbt_slo == w


def _promoted_and_at_risk() -> tuple[SlidingServe, SchedulerState]:
    """A late request past its grace in a promotion window, and a live one at risk that the
    constructor alone would serve: the candidate batch holds the promoted one, so the chunker
    decides (`construct_stage`); a decode with room sets the window."""
    predictor, _ = scene()
    now = 100.05
    decode = Request("d0", 99.0, 300, 300, 1, ttft_slo=0.8, tbt_slo=0.75)
    old = Request("old", 0.0, 600, 0, 0, 3.0, 0.1)
    new = Request("new", now + 0.02 - 3.0, 400, 0, 0, 3.0, 0.1)
    config = SlidingConfig(late_grace=60.0, late_share=0.1)
    return SlidingServe(predictor, config), SchedulerState(now, (decode, old, new), 8000.0)


def test_a_promoted_request_in_the_candidate_batch_is_explained_as_planned() -> None:
    """The old explanation solved the risky anchor's knapsack as if the constructor had
    planned; the decision's record says the constructor passed, and why."""
    policy, state = _promoted_and_at_risk()
    plan, _ = policy.plan(policy.init(), state)
    found = explain(policy, state)
    assert plan.branch == PlanBranch.CHUNKER
    assert found.plan == plan
    assert [(r.request.id, r.level) for r in found.order][:2] == [
        ("old", "promoted"),
        ("new", "urgent"),
    ]
    assert found.risky == ("new",)
    assert [w.chosen for w in found.anchors] == []
    assert "promoted" in found.handover
    assert found.split is not None
    assert found.split.chosen == sum(_prefills(plan, found).values()) == 1000


def _refuse(*args: object, **kwargs: object) -> NoReturn:
    raise AssertionError("a stage function ran")


def _stage_functions() -> list[FunctionType]:
    """Every function defined in a module of `slidingpolicy.stages`."""
    found: dict[str, FunctionType] = {}
    for info in pkgutil.iter_modules(slidingpolicy.stages.__path__):
        module = importlib.import_module(f"slidingpolicy.stages.{info.name}")
        for value in vars(module).values():
            if inspect.isfunction(value) and value.__module__ == module.__name__:
                found[f"{value.__module__}.{value.__qualname__}"] = value
    return list(found.values())


@pytest.mark.parametrize("case", ["readme", "scene", "promoted"])
def test_explain_runs_no_stage_function(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Once the decision is recorded, every stage function is made to raise (its code, so
    that no name it is imported under escapes): `plan` then fails, and `explain` gives the
    same explanation from the record alone."""
    if case == "promoted":
        policy, state = _promoted_and_at_risk()
    else:
        predictor, state = readme() if case == "readme" else scene()
        policy = SlidingServe(predictor)
    expected = explain(policy, state)
    recorded = policy.decide(state)
    monkeypatch.setattr(SlidingServe, "decide", lambda self, state: recorded)
    functions = _stage_functions()
    names = {f.__name__ for f in functions}
    assert {"prepare", "check_violations", "search_anchors", "sliding_chunk"} <= names
    assert {"mlps_keys", "urgency", "ranks", "binding_decodes", "decide"} <= names
    for function in functions:
        monkeypatch.setattr(function, "__code__", _refuse.__code__)
    with pytest.raises(AssertionError, match="a stage function ran"):
        policy.plan(policy.init(), state)
    assert explain(policy, state) == expected


def test_a_promoted_request_is_shown_as_promoted() -> None:
    """Past its deadline by more than the late grace, in a promotion window: first, and said
    to be promoted rather than late."""
    late = Request("old", 0.0, 600, 0, 0, 3.0, 0.1)
    fresh = Request("new", 99.5, 400, 0, 0, 3.0, 0.1)
    state = SchedulerState(100.05, (late, fresh), 8000.0)
    config = SlidingConfig(level_order="deadline", late_grace=60.0, late_share=0.1)
    found = explain(SlidingServe(default_predictor(), config), state)
    assert [(r.request.id, r.level) for r in found.order] == [("old", "promoted"), ("new", "calm")]


def test_the_scene_example_is_the_docs_worked_example() -> None:
    snippet = runpy.run_path(str(ROOT / "docs" / "snippets" / "scene.py"))
    predictor, state = scene()
    assert state == snippet["state"]
    assert predictor == snippet["predictor"]
    found = explain(SlidingServe(predictor), state)
    assert [r.request.id for r in found.order] == ["r1", "r2", "r4", "r3", "r5"]
    assert [r.level for r in found.order] == ["urgent"] * 3 + ["calm"] * 2
    assert found.t_cur is not None
    assert (found.t_cur.request, round(found.t_cur.value, 6)) == ("d0", 0.03)
    assert found.risky == ("r1",)
    (work,) = found.anchors
    assert (work.capacity, work.chosen) == (1060, ("r1",))
    assert found.plan.branch == PlanBranch.CONSTRUCTOR


def test_the_readme_example_is_the_readmes_state() -> None:
    predictor, state = readme()
    assert predictor == default_predictor()
    text = (ROOT / "README.md").read_text()
    for record in ("prefilled=900, generated=14", "prompt_tokens=2000", "now=12.0"):
        assert record in text
    assert [r.id for r in state.requests] == ["a", "b"]
    found = explain(SlidingServe(predictor), state)
    assert found.split is not None
    assert found.split.chosen == found.split.greedy == 2000
    assert found.split.ternary == 1000


def test_a_baseline_has_no_sliding_steps_and_online_is_unwrapped() -> None:
    assert sliding_of(by_name("sarathi", default_predictor())) is None
    learning = by_name("slidingserve", default_predictor(), refit_every=10)
    assert isinstance(sliding_of(learning), SlidingServe)
