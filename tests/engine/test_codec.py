"""States and plans survive the JSON round trip; malformed documents name the field."""

from __future__ import annotations

import json

import attrs
import pytest

from slidingpolicy import Allocation, BatchPlan, Diagnostics, Request, SchedulerState
from slidingpolicy.codec import CodecError, log_line, parse_line, parse_step
from slidingpolicy.errors import SlidingPolicyError


def _pair() -> tuple[SchedulerState, BatchPlan]:
    state = SchedulerState(
        2.0,
        (
            Request("a", 0.5, 100, 100, 3, 1.0, 0.1),
            Request("b", 1.0, 400, 0, 0, 3.0, 0.1, protected=True),
        ),
        8000.0,
        512,
    )
    plan = BatchPlan(
        (Allocation("a", 1), Allocation("b", 256)),
        "chunker",
        256,
        0.02,
        Diagnostics(t_cur=0.05, budget_sum=300, risky=("b",)),
    )
    return state, plan


def test_round_trip() -> None:
    state, plan = _pair()
    assert parse_line(log_line(state, plan, 2048)) == (state, plan, 2048)


def test_a_step_without_a_plan_and_extra_keys() -> None:
    state, plan = _pair()
    document = json.loads(log_line(state, plan, 2048))
    document.update(latency=0.05, scheduled={"a": 1}, fallback=None)
    assert parse_step(json.dumps(document)) == (state, plan, 2048)
    document.update(plan=None, fallback="policy raised ZeroDivisionError")
    assert parse_step(json.dumps(document)) == (state, None, 2048)


@pytest.mark.parametrize(
    ("mutate", "needle"),
    [
        (lambda d: d.pop("state"), "state"),
        (lambda d: d["state"]["requests"][0].update(prefilled=900), "prefilled"),
        (lambda d: d["plan"].update(allocations=[["a"]]), "allocations[0]"),
        (lambda d: d.update(token_budget=-1), "token_budget"),
        (lambda d: d.update(plan=None), "plan: must be a JSON object, got null"),
        (lambda d: d["state"]["requests"][0].update(colour=1), "colour"),
    ],
)
def test_malformed_lines_name_the_field(mutate: object, needle: str) -> None:
    state, plan = _pair()
    document = json.loads(log_line(state, plan, 2048))
    mutate(document)  # type: ignore[operator]
    with pytest.raises(SlidingPolicyError, match=needle.replace("[", r"\[")):
        parse_line(json.dumps(document))


def test_not_json() -> None:
    with pytest.raises(CodecError, match="not JSON"):
        parse_line("{")


def test_a_log_line_records_the_margin_its_plan_was_priced_with() -> None:
    state, plan = _pair()
    priced = attrs.evolve(plan, diagnostics=attrs.evolve(plan.diagnostics, margin=1.37))
    line = log_line(state, priced, 2048)
    assert json.loads(line)["plan"]["diagnostics"]["margin"] == 1.37
    assert parse_line(line)[1].diagnostics.margin == 1.37


def test_a_line_written_before_plans_carried_their_margin_reads_as_margin_1() -> None:
    state, plan = _pair()
    document = json.loads(log_line(state, plan, 2048))
    del document["plan"]["diagnostics"]["margin"]
    assert parse_line(json.dumps(document))[1].diagnostics.margin == 1.0


@pytest.mark.parametrize("margin", [0.5, "wide"])
def test_a_bad_margin_names_the_field(margin: object) -> None:
    state, plan = _pair()
    document = json.loads(log_line(state, plan, 2048))
    document["plan"]["diagnostics"]["margin"] = margin
    with pytest.raises(SlidingPolicyError, match="diagnostics: margin"):
        parse_line(json.dumps(document))
