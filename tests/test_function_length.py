"""No function of the package over 60 lines outside `cli/` (ruff counts statements and
branches, not lines: pyproject.toml)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "slidingpolicy"
LIMIT = 60


def _long_functions(tree: ast.AST) -> list[tuple[str, int]]:
    """(name, lines) of every function longer than LIMIT lines, decorators aside."""
    return [
        (node.name, node.end_lineno - node.lineno + 1)
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > LIMIT
    ]


def test_no_function_over_60_lines_outside_the_cli() -> None:
    found = [
        f"{path.relative_to(PACKAGE.parent)}: {name} ({lines} lines)"
        for path in sorted(PACKAGE.rglob("*.py"))
        if "cli" not in path.relative_to(PACKAGE).parts
        for name, lines in _long_functions(ast.parse(path.read_text()))
    ]
    assert not found, found


def test_a_long_function_is_seen() -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(LIMIT))
    assert _long_functions(ast.parse(f"def f():\n{body}")) == [("f", LIMIT + 1)]
