"""How a path is given: as `open` takes it, a str or any os.PathLike (`StrPath`), which
every public function that takes a path accepts and turns into a `Path` itself."""

from __future__ import annotations

import os
from pathlib import Path

StrPath = str | os.PathLike[str]
"""A path as every public function takes it: a str or any os.PathLike (a `pathlib.Path`)."""


def as_path(value: StrPath) -> Path:
    """`value` as a `Path` (an attrs converter: a record's path field takes a str too)."""
    return Path(value)


def as_optional_path(value: StrPath | None) -> Path | None:
    """`value` as a `Path`, None kept."""
    return None if value is None else Path(value)
