"""The `slidingpolicy` command line (typer); `main` is the console script's entry point.

The command line is an extra (`pip install 'slidingpolicy[cli]'`: typer and rich): without
it, `main` says so in one line on stderr and exits with code 2, and the library still imports.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from importlib.util import find_spec

EXTRA = "pip install 'slidingpolicy[cli]'"
"""The install command that brings the command line's dependencies."""
NEEDS = ("typer", "rich")
"""What the command line imports beyond the core."""


def missing() -> list[str]:
    """The command line's dependencies that are not installed."""
    return [name for name in NEEDS if find_spec(name) is None]


def main(argv: Sequence[str] | None = None) -> None:
    """Run the CLI (`slidingpolicy.cli.app.main`), or say which extra it needs, exit code 2."""
    absent = missing()
    if absent:
        print(
            f"slidingpolicy: error: the command line needs {' and '.join(absent)}, "
            f"from the cli extra: {EXTRA}",
            file=sys.stderr,
        )
        sys.exit(2)
    from slidingpolicy.cli.app import main as run

    run(argv)


__all__ = ["EXTRA", "main", "missing"]
