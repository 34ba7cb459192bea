"""What every file writer shares: atomic writes.

A writer writes to a temporary name beside the target and renames it (`replace_atomically`),
so an interrupted run never leaves a half-written file, nor the temporary one (it is removed
on any exception: Ctrl-C, and SIGTERM, which the command line turns into one, `cli.signals`).
Reading, with its limits, is `_parse`'s.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from slidingpolicy._paths import StrPath


@contextmanager
def replace_atomically(path: StrPath) -> Iterator[Path]:
    """Yield a temporary path beside `path`; on success rename it to `path`, else remove it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.stem}.{os.getpid()}.tmp{path.suffix}")
    try:
        yield temporary
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def write_text(path: StrPath, text: str) -> None:
    """`text` to `path` as UTF-8, atomically."""
    with replace_atomically(path) as temporary:
        temporary.write_text(text, encoding="utf-8")
