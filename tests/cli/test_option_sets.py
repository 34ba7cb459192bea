"""An option set puts its options where the command names its record, and the command receives
the record built from them: seen by `inspect.signature`, by --help, and by a call."""

from __future__ import annotations

import inspect
from typing import Annotated

import attrs
import pytest
import typer
from typer.testing import CliRunner

from slidingpolicy.cli.option_sets import OptionSet, Param, takes


@attrs.frozen
class Point:
    x: int
    y: int = 1


XOpt = Annotated[int, typer.Option("--x", min=0, help="Across, from the left.")]
YOpt = Annotated[int, typer.Option("--y", help="Up, from the bottom.")]
POINT = OptionSet(Point, (Param("x", XOpt, 0), Param("y", YOpt, 1)), Point)

received: list[tuple[str, Point, bool]] = []


@takes(POINT)
def toy(
    name: Annotated[str, typer.Option("--name", help="What to call it.")] = "a",
    *,
    point: Point,
    last: Annotated[bool, typer.Option("--last", help="The last one.")] = False,
) -> None:
    """A toy command that takes a point."""
    received.append((name, point, last))


def _run(args: list[str]) -> tuple[int, str]:
    app = typer.Typer(add_completion=False)
    app.command()(toy)
    result = CliRunner().invoke(app, args, env={"COLUMNS": "200", "NO_COLOR": "1"})
    return result.exit_code, result.output


def test_the_options_stand_where_the_record_is_named() -> None:
    signature = inspect.signature(toy, eval_str=True)
    assert list(signature.parameters) == ["name", "x", "y", "last"]
    assert signature.parameters["x"].annotation == XOpt
    assert signature.parameters["y"].default == 1


def test_help_lists_the_options_in_that_order() -> None:
    code, shown = _run(["--help"])
    assert code == 0
    flags = ["--name", "--x", "--y", "--last"]
    places = [shown.index(flag + " ") for flag in flags]
    assert places == sorted(places)
    assert "Across, from the left." in shown


def test_a_call_receives_the_record() -> None:
    received.clear()
    code, _ = _run(["--x", "3", "--last"])
    assert code == 0
    assert received == [("a", Point(3, 1), True)]


def test_a_bad_value_is_refused_naming_its_flag() -> None:
    received.clear()
    code, shown = _run(["--x", "-1"])
    assert code == 2
    assert "--x" in shown
    assert received == []


def test_a_subset_keeps_its_order_and_the_record_defaults_the_rest() -> None:
    only_x = POINT.only("x")
    assert [p.name for p in only_x.params] == ["x"]
    assert only_x.build(x=2) == Point(2, 1)
    with pytest.raises(ValueError, match="Point options have no \\['z'\\]"):
        POINT.only("x", "z")


def test_a_command_without_the_record_is_refused() -> None:
    def other(name: str = "a") -> None:
        """No point here."""

    with pytest.raises(TypeError, match="other has no parameter of type Point"):
        takes(POINT)(other)
