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
        "slidingserve",
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


OLD_PATHS = {
    "chunker": ("chunker", ""),
    "constructor": ("constructor", ""),
    "idle": ("idle", ""),
    "vllm": ("whole", "vllm"),
    "sarathi": ("whole", "sarathi"),
    "sarathi-edf": ("whole", "sarathi-edf"),
    "qoserve": ("whole", "qoserve"),
}
"""Every `path` a plan of a line written before plans named their branch and policy held."""


def _old_line(path: object) -> str:
    """A log line as it was written then: the plan's `path`, no `branch` or `policy`."""
    state, plan = _pair()
    document = json.loads(log_line(state, plan, 2048))
    del document["plan"]["branch"], document["plan"]["policy"]
    document["plan"]["path"] = path
    return json.dumps(document)


@pytest.mark.parametrize("path", OLD_PATHS)
def test_an_old_line_of_each_path_parses_to_its_branch_and_policy(path: str) -> None:
    state, plan = _pair()
    branch, policy = OLD_PATHS[path]
    expected = attrs.evolve(plan, branch=branch, policy=policy)
    assert parse_line(_old_line(path)) == (state, expected, 2048)
    document = json.loads(_old_line(path))
    document.update(latency=0.05, scheduled={"a": 1}, fallback=None)
    assert parse_step(json.dumps(document))[1] == expected


@pytest.mark.parametrize(
    ("mutate", "needle"),
    [
        (lambda p: p.update(path="chunkr"), "plan: path='chunkr' is not one of chunker,"),
        (lambda p: p.update(path=["vllm"]), r"plan: path=\['vllm'\] is not one of"),
        (lambda p: p.update(branch="vllm"), "batch plan: branch='vllm' is not one of"),
        (lambda p: p.update(branch="whole", policy=None), "batch plan: policy must be a str"),
        (lambda p: p.pop("branch"), "plan: missing field 'branch'"),
    ],
)
def test_a_plan_that_names_no_known_branch_is_malformed(mutate: object, needle: str) -> None:
    state, plan = _pair()
    document = json.loads(log_line(state, plan, 2048))
    if "path" in needle:
        del document["plan"]["branch"]
    mutate(document["plan"])  # type: ignore[operator]
    with pytest.raises(SlidingPolicyError, match=needle):
        parse_line(json.dumps(document))


def test_a_new_line_names_the_branch_and_the_policy_and_a_missing_policy_is_none() -> None:
    state, plan = _pair()
    document = json.loads(log_line(state, plan, 2048))
    assert (document["plan"]["branch"], document["plan"]["policy"]) == ("chunker", "slidingserve")
    assert "path" not in document["plan"]
    del document["plan"]["policy"]
    assert parse_line(json.dumps(document))[1] == attrs.evolve(plan, policy="")
