"""A policy of your own, registered: its options carry the types its factory annotates and a
value of another type is refused at the door, in the one line a record's field check gives;
whatever else its factory raises becomes one line naming the policy and the options; and the
same factory registered twice under its name (a file loaded as a plugin and imported by
another) is one registration."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import pytest

from slidingpolicy import (
    InvalidRecordError,
    LatencyPredictor,
    by_name,
    default_predictor,
    load_plugins,
    names,
    register,
)
from slidingpolicy.errors import SlidingPolicyError
from slidingpolicy.policies import plugin_loader, registry
from slidingpolicy.policies.fixed_budget import FixedBudget
from slidingpolicy.policies.option_types import option_types
from slidingpolicy.policies.vllm_fcfs import vllm
from slidingpolicy.stages.order import FCFS

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "least_slack.py"


@pytest.fixture(autouse=True)
def own_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """The registry and the plugins loaded as they are now, restored after the test."""
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    monkeypatch.setattr(plugin_loader, "_LOADED", set())


def typed(  # type: ignore[no-untyped-def]
    predictor: LatencyPredictor,
    budget: int = 512,
    share: float = 0.5,
    cap: int | None = None,
    order: Literal["fcfs", "edf"] = "fcfs",
    fast: bool = False,
    tag: str = "",
    menu: tuple[int, ...] = (128,),
    anything: Any = None,
    unannotated=None,
) -> FixedBudget:
    """A factory whose options are annotated in each way `option_types` reads."""
    if budget > 4096:
        raise ValueError(f"a budget of {budget} tokens:\n  more than a GPU holds")
    if share == 0.0:
        raise InvalidRecordError("policy 'typed'", "share", "=0 must be > 0")
    return FixedBudget(predictor, "typed", budget, FCFS)


OPTIONS = ("budget", "share", "cap", "order", "fast", "tag", "menu", "anything", "unannotated")


def test_the_types_are_the_factorys_annotations_of_what_a_command_line_value_can_be() -> None:
    assert option_types(typed, OPTIONS) == {
        "budget": int,
        "share": float,
        "cap": int | None,
        "order": Literal["fcfs", "edf"],
        "fast": bool,
        "tag": str,
    }


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"budget": "abc"}, "budget must be an int, got 'abc'"),
        ({"budget": 2.5}, "budget must be an int, got 2.5"),
        ({"budget": True}, "budget must be an int, got True"),
        ({"share": "half"}, "share must be a number, got 'half'"),
        ({"share": False}, "share must be a number, got False"),
        ({"cap": 1.5}, "cap must be an int or None, got 1.5"),
        ({"order": "mlps"}, "order must be one of 'fcfs', 'edf', got 'mlps'"),
        ({"fast": 1}, "fast must be a bool, got 1"),
        ({"tag": 3}, "tag must be a str, got 3"),
    ],
)
def test_a_value_of_another_type_is_refused_in_one_line(
    options: dict[str, object], message: str
) -> None:
    register("typed", typed, OPTIONS)
    with pytest.raises(InvalidRecordError) as refused:
        by_name("typed", default_predictor(), **options)
    assert str(refused.value) == f"policy 'typed': {message}"


@pytest.mark.parametrize(
    "options",
    [
        {"budget": 256, "share": 1, "cap": None, "order": "edf", "fast": True, "tag": "x"},
        {"share": 0.25, "cap": 7, "menu": [256], "anything": object(), "unannotated": "?"},
    ],
)
def test_a_value_of_its_type_reaches_the_factory(options: dict[str, object]) -> None:
    register("typed", typed, OPTIONS)
    assert by_name("typed", default_predictor(), **options).name == "typed"


def test_whatever_else_the_factory_raises_is_one_line_naming_the_options() -> None:
    register("typed", typed, OPTIONS)
    with pytest.raises(InvalidRecordError) as refused:
        by_name("typed", default_predictor(), budget=8192, tag="big")
    assert str(refused.value) == (
        "policy 'typed': budget=8192, tag='big' made its factory raise ValueError: "
        "a budget of 8192 tokens: more than a GPU holds"
    )
    assert isinstance(refused.value.__cause__, ValueError)


def test_a_factory_that_raises_with_its_defaults_is_named_so() -> None:
    def broken(predictor: LatencyPredictor) -> FixedBudget:
        raise RuntimeError("no GPU")

    register("broken", broken)
    with pytest.raises(
        InvalidRecordError, match=r"^policy 'broken': factory raised RuntimeError: "
    ):
        by_name("broken", default_predictor())


def test_a_factorys_own_error_of_ours_passes_as_it_is() -> None:
    register("typed", typed, OPTIONS)
    with pytest.raises(SlidingPolicyError) as refused:
        by_name("typed", default_predictor(), share=0.0)
    assert str(refused.value) == "policy 'typed': share=0 must be > 0"


def test_the_same_factory_registered_twice_is_one_registration() -> None:
    register("typed", typed, OPTIONS, "a line")
    register("typed", typed, OPTIONS, "a line")
    assert names().count("typed") == 1
    for changed in ((vllm, (), "a line"), (typed, OPTIONS[:1], "a line")):
        with pytest.raises(InvalidRecordError, match="'typed': name is taken"):
            register("typed", *changed)
    with pytest.raises(InvalidRecordError, match="'typed': name is taken"):
        register("typed", typed, OPTIONS, "another line")
    with pytest.raises(InvalidRecordError, match="'vllm': name is taken"):
        register("vllm", vllm, ("token_budget",), registry.summary("vllm"))


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder on `sys.path` holding the example as a module, and a plugin that imports it."""
    folder = tmp_path / "site"
    folder.mkdir()
    (folder / "least_slack.py").write_text(EXAMPLE.read_text())
    (folder / "more_policies.py").write_text("import least_slack  # registers least-slack\n")
    monkeypatch.syspath_prepend(str(folder))
    yield folder
    for module in ("least_slack", "more_policies"):
        sys.modules.pop(module, None)


def test_a_file_loaded_as_a_plugin_and_imported_by_another_registers_once(site: Path) -> None:
    """Failed before: "policy 'least-slack': name is taken"."""
    load_plugins([str(site / "least_slack.py"), "more_policies"])
    assert names().count("least-slack") == 1
    assert by_name("least-slack", default_predictor(), chunk=64).name == "least-slack"
