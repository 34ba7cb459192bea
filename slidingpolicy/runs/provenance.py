"""What made a results file: the package's version, the git commit of its source, the command.

Every `results.json` carries these under "provenance", so that a number can be traced to the
code and the invocation that produced it. The commit is known only when the package is run
from a git work tree that tracks it (a clone, or an editable install); it is None otherwise
(an installed wheel, no git), and finding it never fails a run.
"""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from slidingpolicy._version import __version__

PACKAGE = Path(__file__).resolve().parent.parent


def _git(*args: str) -> str | None:
    """`git -C PACKAGE ARGS`'s output, or None when git is missing or fails."""
    try:
        done = subprocess.run(
            ["git", "-C", str(PACKAGE), *args],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def commit() -> str | None:
    """The commit of the work tree that holds this package's source, with "-dirty" when its
    tracked files differ from it; None when the source is not tracked by git (a wheel
    installed into a virtual environment inside a clone included)."""
    if _git("ls-files", "--error-unmatch", "__init__.py") is None:
        return None
    head = _git("rev-parse", "HEAD")
    if not head:
        return None
    changes = _git("status", "--porcelain", "--untracked-files=no")
    return head + ("-dirty" if changes else "")


def provenance(command: Sequence[str] | None) -> dict[str, Any]:
    """{"version", "commit", "command"} for a results file; `command` is the argument list,
    stored as one shell-quoted line (None when the results were not made by a command)."""
    return {
        "version": __version__,
        "commit": commit(),
        "command": None if command is None else shlex.join(command),
    }
