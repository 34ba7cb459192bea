"""The import graph points only down: every `slidingpolicy` import of a module, at the top or
inside a function, lazy or under TYPE_CHECKING, names a module of a lower layer (or of its own
package). Read from the source's syntax tree, so an import the tests never execute counts too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "slidingpolicy"

CORE = {
    "_version": 0,
    "errors": 0,
    "_validate": 1,
    "_arrays": 1,
    "_io": 1,
    "_parse": 1,
    "records": 2,
    "_arguments": 3,
    "pricing": 4,
    "stages": 5,
    "invariants": 5,
    "codec": 5,
    "policy": 6,
    "policies": 7,
}
"""The policy library, its layers from the bottom: parsing and argument checks, the records, the
predictor, the stages that build a plan, the policies made of them."""

ABOVE_CORE = {
    "step_trace": 8,
    "hardware": 9,
    "predictors": 10,
    "embedding": 11,
    "telemetry": 11,
    "explanation": 11,
    "examples": 11,
    "__init__": 11,
}
"""What the engine and the engine adapters stand on: the step trace, the hardware models and
the predictors fitted on them (packaged, profiled, calibrated and cached), the settings
every adapter reads, and the metrics every adapter exposes; one decision explained, the
worked examples, and the package's own names (`slidingpolicy.__init__`)."""

ENGINE = {
    "workloads": 12,
    "metrics": 13,
    "engine": 14,
    "runs": 15,
    "bound": 16,
    "figures": 16,
}
"""The offline engine: the workloads it runs, the metrics it reads off a run (which replay
and the bound read too), the simulator, the runs that orchestrate many simulations, the bound
on capacity, and the figures."""

APPLICATIONS = {
    "replay": 17,
    "reproduce": 18,
    "cli": 19,
}
"""What runs the engine for a user: a replay against a real server, the paper's experiments,
and the command line over all of them."""

LAYERS = {**CORE, **ABOVE_CORE, **ENGINE, **APPLICATIONS}

TOP_LEVEL = sorted(
    {p.stem for p in PACKAGE.glob("*.py")}
    | {d.name for d in PACKAGE.iterdir() if d.is_dir() and any(d.glob("*.py"))}
)
"""Every top-level module and package of `slidingpolicy` (`__init__`: the package itself)."""


def _imported(tree: ast.AST) -> set[str]:
    """The `slidingpolicy` subpackage or module (first name under it) of every import."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "slidingpolicy":
                names |= {f"slidingpolicy.{_top(a.name)}" for a in node.names}
            else:
                names.add(node.module)
    return {n.split(".")[1] for n in names if n.startswith("slidingpolicy.")}


def _top(name: str) -> str:
    """The top-level module `from slidingpolicy import name` reads: `name` itself, or the
    package's `__init__` for a name it defines (`__version__`, `SlidingServe`, ...)."""
    return name if name in TOP_LEVEL else "__init__"


def _modules(top: str) -> list[Path]:
    """The source files of a top-level module or package of `slidingpolicy`."""
    folder = PACKAGE / top
    return sorted(folder.rglob("*.py")) if folder.is_dir() else [PACKAGE / f"{top}.py"]


@pytest.mark.parametrize("top", sorted(LAYERS))
def test_every_import_points_down(top: str) -> None:
    upward = {
        f"{path.relative_to(PACKAGE.parent)} imports slidingpolicy.{name}"
        for path in _modules(top)
        for name in _imported(ast.parse(path.read_text(), str(path)))
        if name != top and LAYERS.get(name, len(LAYERS) + 1) >= LAYERS[top]
    }
    assert not upward, sorted(upward)


def test_the_layers_name_every_module_they_cover() -> None:
    assert all(_modules(top)[0].is_file() for top in LAYERS)


def test_every_top_level_module_has_a_layer() -> None:
    assert sorted(set(TOP_LEVEL) - set(LAYERS)) == []


def test_an_upward_import_is_seen_even_inside_a_function() -> None:
    source = "def f():\n    from slidingpolicy.engine.simulator import simulate\n"
    assert _imported(ast.parse(source)) == {"engine"}
    assert _imported(ast.parse("from slidingpolicy import _validate")) == {"_validate"}
    assert _imported(ast.parse("from slidingpolicy import __version__")) == {"__init__"}
