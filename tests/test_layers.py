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
    "_paths": 0,
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
    "routing": 8,
}
"""The policy library, its layers from the bottom: how a path is given, parsing and argument
checks, the records, the predictor, the stages that build a plan, the policies made of them,
and the routers that send requests to the replicas running them."""

ABOVE_CORE = {
    "step_trace": 8,
    "hardware": 9,
    "predictors": 10,
    "telemetry": 11,
    "explanation": 11,
    "examples": 11,
    "__init__": 11,
    "embedding": 12,
}
"""What the engine and the engine adapters stand on: the step trace, the hardware models and
the predictors fitted on them (packaged, profiled, calibrated and cached), the metrics every
adapter exposes; one decision explained, the worked examples, and the package's own names
(`slidingpolicy.__init__`); and a policy's life inside any engine, which every adapter runs
on."""

ENGINE = {
    "workloads": 14,
    "metrics": 15,
    "engine": 16,
    "cluster": 17,
    "runs": 18,
    "testing": 18,
    "bound": 19,
    "figures": 19,
}
"""The offline engine: the workloads it runs, the metrics it reads off a run (which replay
and the bound read too), the simulator, a cluster of its replicas behind a router, the runs
that orchestrate many simulations, the test
kits (one holds any policy to the invariants, on random states and through a simulated run;
one holds an engine binding to the embedding loop's promises), the bound on capacity, and the
figures."""

APPLICATIONS = {
    "replay": 20,
    "reproduce": 21,
    "cli": 22,
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


ADAPTERS = Path(__file__).resolve().parent.parent / "adapters"

ADAPTER_PACKAGES = {
    "vllm": ("slidingpolicy_vllm", "vllm"),
    "transformers": ("slidingpolicy_transformers", "transformers"),
    "ray": ("slidingpolicy_ray", "ray"),
}
"""Each adapter's folder: its package, and the engine it binds."""

BUILDS_ON = {"slidingpolicy_ray": {"slidingpolicy_transformers"}}
"""The adapters an adapter is built on and may import: Ray Serve's replicas host the
transformers adapter's engine and reuse its server's pieces."""

ROUTER_API = {"slidingpolicy.routing"}
"""What of the core a router's binding imports beside `BINDING_API`: the routers and the
reports they read (`slidingpolicy.routing`)."""

ROUTERS = {"slidingpolicy_ray"}
"""The adapters that bind a router (and may import `ROUTER_API`)."""

BINDING_API = {"slidingpolicy", "slidingpolicy.embedding", "slidingpolicy.embedding.prometheus"}
"""What of the core an adapter's binding imports: the package's names and a policy's life in
an engine (`slidingpolicy.embedding`), its Prometheus metrics among them."""

TOOLS = {"grid", "grid_run", "grid_report", "testing"}
"""Adapter modules that are tools around the binding (an engine's measured step times against
the offline engine's hardware models; test helpers): they may import any public module of
the core."""


def _imports(tree: ast.AST) -> set[str]:
    """Every module an import of `tree` names, as written (absolute imports)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def adapter_faults(folder: Path, own: str) -> list[str]:
    """What the adapter in `folder` (package `own`) imports of ours that it may not: a
    private module of the core, another adapter, or, from a module of its binding (not one
    of `TOOLS`, not a test), any module of the core but `BINDING_API`."""
    others = {package for package, _ in ADAPTER_PACKAGES.values()} - {own}
    others -= BUILDS_ON.get(own, set())
    allowed = BINDING_API | ROUTER_API if own in ROUTERS else BINDING_API
    faults = []
    for path in sorted(folder.rglob("*.py")):
        binding = "src" in path.parts and path.stem not in TOOLS
        for name in sorted(_imports(ast.parse(path.read_text(), str(path)))):
            top = name.split(".")[0]
            private = top == "slidingpolicy" and any(p.startswith("_") for p in name.split("."))
            beyond = binding and top == "slidingpolicy" and name not in allowed
            if top in others or private or beyond:
                faults.append(f"{path.relative_to(folder)} imports {name}")
    return faults


@pytest.mark.parametrize("adapter", sorted(ADAPTER_PACKAGES))
def test_an_adapter_imports_the_cores_public_api_and_its_engine(adapter: str) -> None:
    own, _ = ADAPTER_PACKAGES[adapter]
    assert adapter_faults(ADAPTERS / adapter, own) == []


def test_an_adapter_reaching_past_the_api_is_seen(tmp_path: Path) -> None:
    source = tmp_path / "src" / "pkg"
    source.mkdir(parents=True)
    (source / "scheduler.py").write_text(
        "from slidingpolicy.embedding import PolicyLoop\n"
        "from slidingpolicy.step_trace import TraceWriter\n"
        "import slidingpolicy_vllm.door\n"
    )
    (source / "grid.py").write_text("from slidingpolicy.hardware import build\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text("from slidingpolicy._io import x\n")
    assert adapter_faults(tmp_path, "slidingpolicy_transformers") == [
        "src/pkg/scheduler.py imports slidingpolicy.step_trace",
        "src/pkg/scheduler.py imports slidingpolicy_vllm.door",
        "tests/test_x.py imports slidingpolicy._io",
    ]


def test_a_router_binding_may_import_the_routers_and_the_adapter_it_builds_on(
    tmp_path: Path,
) -> None:
    source = tmp_path / "src" / "pkg"
    source.mkdir(parents=True)
    (source / "router.py").write_text(
        "from slidingpolicy.routing import Ledger\n"
        "from slidingpolicy_transformers.server import token_event\n"
        "from slidingpolicy.cluster import simulate\n"
        "import slidingpolicy_vllm.door\n"
    )
    assert adapter_faults(tmp_path, "slidingpolicy_ray") == [
        "src/pkg/router.py imports slidingpolicy.cluster",
        "src/pkg/router.py imports slidingpolicy_vllm.door",
    ]
    assert adapter_faults(tmp_path, "slidingpolicy_transformers") == [
        "src/pkg/router.py imports slidingpolicy.cluster",
        "src/pkg/router.py imports slidingpolicy.routing",
        "src/pkg/router.py imports slidingpolicy_vllm.door",
    ]
