"""No two modules of the package share a file name: a name says what a module is, wherever it
sits (a `cli/<command>.py` keeps its command's name, so nothing else takes it). Only a
package's `__init__.py` and `__main__.py` repeat."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "slidingpolicy"

REPEATABLE = {"__init__.py", "__main__.py"}


def shared_names(paths: Iterable[Path]) -> dict[str, list[str]]:
    """Each file name held by more than one of `paths`, with the paths that hold it."""
    holders: defaultdict[str, list[str]] = defaultdict(list)
    for path in paths:
        if path.name not in REPEATABLE:
            holders[path.name].append(path.as_posix())
    return {name: sorted(held) for name, held in holders.items() if len(held) > 1}


def test_no_two_modules_share_a_name() -> None:
    paths = [p.relative_to(PACKAGE) for p in PACKAGE.rglob("*.py")]
    assert shared_names(paths) == {}


def test_a_shared_name_is_reported_with_every_module_that_holds_it() -> None:
    paths = [Path(p) for p in ("cli/check.py", "stages/check.py", "cli/__init__.py", "x.py")]
    assert shared_names(paths) == {"check.py": ["cli/check.py", "stages/check.py"]}
    assert shared_names([Path("a/__init__.py"), Path("b/__init__.py")]) == {}
