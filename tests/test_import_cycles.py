"""No import circles anywhere in the tree: the modules of `slidingpolicy` and of each adapter's
package, with every import counted (at the top, inside a function, lazy or under
TYPE_CHECKING), form a graph without a cycle. Read from the source's syntax tree."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {
    "slidingpolicy": ROOT / "slidingpolicy",
    "slidingpolicy_vllm": ROOT / "adapters" / "vllm" / "src" / "slidingpolicy_vllm",
    "slidingpolicy_transformers": ROOT / "adapters" / "transformers" / "src"
    / "slidingpolicy_transformers",
}  # fmt: skip


def modules(packages: Mapping[str, Path]) -> dict[str, Path]:
    """Each module of `packages` (name → folder) by dotted name (a package by its own)."""
    found = {}
    for top, folder in packages.items():
        for path in folder.rglob("*.py"):
            parts = [top, *path.relative_to(folder).with_suffix("").parts]
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def import_graph(packages: Mapping[str, Path]) -> dict[str, set[str]]:
    """Module → each module of `packages` it imports (`from a import b` names the module
    a.b when there is one, else a)."""
    known = modules(packages)

    def resolve(name: str) -> str | None:
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {module: set() for module in known}
    for module, path in known.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            named: list[str] = []
            if isinstance(node, ast.Import):
                named = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                named = [f"{node.module}.{a.name}" for a in node.names]
            for name in named:
                target = resolve(name)
                if target is not None and target != module:
                    graph[module].add(target)
    return graph


def cycles(packages: Mapping[str, Path]) -> list[list[str]]:
    """The import circles of `packages`, each as the sorted modules on it: one circle is
    found, one of its imports taken out, and so on until none is left."""
    graph = import_graph(packages)
    found = []
    while True:
        try:
            TopologicalSorter(graph).prepare()
        except CycleError as error:
            circle: list[str] = error.args[1]
            found.append(sorted(set(circle)))
            graph[circle[1]].discard(circle[0])
            continue
        return sorted(found)


def test_the_tree_has_no_import_circle() -> None:
    assert cycles(PACKAGES) == []


def test_a_circle_through_a_lazy_or_type_checking_import_is_seen(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                  "    from pkg.b import B\n")  # fmt: skip
    (package / "b.py").write_text("def f():\n    from pkg import c\n")
    (package / "c.py").write_text("import pkg.a\n")
    (package / "d.py").write_text("from pkg.a import x\n")
    assert cycles({"pkg": package}) == [["pkg.a", "pkg.b", "pkg.c"]]
