"""`explain` walks the decision the policy makes: its plan is the policy's plan, and each step's
numbers are the ones that plan came from; the built-in examples are the README's and the
docs' states."""

from __future__ import annotations

import runpy
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from slidingpolicy import SchedulerState, SlidingServe, default_predictor
from slidingpolicy.examples import readme, scene
from slidingpolicy.explain import explain, sliding_of
from slidingpolicy.policies import by_name
from slidingpolicy.pricing.model import LatencyPredictor
from slidingpolicy.records.config import SlidingConfig
from tests.strategies import configs, pressed_states, realistic_predictors, states

ROOT = Path(__file__).resolve().parents[2]


@settings(max_examples=60, deadline=None)
@given(st.one_of(states(), pressed_states()), realistic_predictors(), configs())
def test_the_explained_plan_is_the_policys_and_its_steps_agree_with_it(
    state: SchedulerState, predictor: LatencyPredictor, config: SlidingConfig
) -> None:
    policy = SlidingServe(predictor, config)
    found = explain(policy, state)
    plan, _ = policy.plan(policy.init(), state)
    assert found.plan == plan
    prefill = sum(c for rid, c in plan.tokens_of().items() if rid not in found.decodes)
    if found.split is not None:
        assert found.split.chosen == prefill
        assert found.split.budget_sum == plan.diagnostics.budget_sum
    if plan.branch == "constructor":
        best = [w for w in found.anchors if w.anchor == plan.diagnostics.anchor]
        assert best
        assert set(best[0].chosen) == {r for r in plan.tokens_of() if r not in found.decodes}
        assert found.risky == plan.diagnostics.risky
    assert [r.request.id for r in found.order][: len(found.candidate)] == list(found.candidate)


def test_a_promoted_request_is_shown_as_promoted() -> None:
    """Past its deadline by more than the late grace, in a promotion window: first, and said
    to be promoted rather than late."""
    from slidingpolicy.records.request import Request

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
    assert found.plan.branch == "constructor"


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
