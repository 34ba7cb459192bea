"""What every file reader and writer shares: text decoding, bounded JSON numbers, atomic writes.

A reader gets the whole file as text from `read_text`, which turns a missing file, a folder,
bytes that are not UTF-8 (file:line) and any other OS error into the reader's own
`SlidingPolicyError`, with the accepted formats; a UTF-8 byte-order mark is dropped. JSON goes
through `parse_json`, which rejects what Python's json module lets through: NaN, infinities,
numbers too large for a float, integers too large for int64. A writer writes to a temporary
name beside the target and renames it (`replace_atomically`), so an interrupted run never
leaves a half-written file.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from slidingpolicy.errors import SlidingPolicyError

MAX_INT = 2**62
"""The largest integer a JSON document may hold (it fits in int64)."""

MAX_TOKENS = 10**9
"""The largest token count a file may give: far above any context, far below int64."""


def read_text(path: Path | str, error: type[SlidingPolicyError], formats: str) -> str:
    """The file's text; `error` naming the file (and line, for bad bytes) and `formats`."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except IsADirectoryError:
        raise error(f"{path}: cannot read (it is a directory, not a file); {formats}") from None
    except FileNotFoundError:
        raise error(f"{path}: cannot read (no such file); {formats}") from None
    except OSError as problem:
        raise error(f"{path}: cannot read ({problem.strerror}); {formats}") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as problem:
        line = data[: problem.start].count(b"\n") + 1
        raise error(f"{path}:{line}: not UTF-8 text (a binary file?); {formats}") from None


class JsonValueError(ValueError):
    """A JSON number that Python would accept but no record can hold."""


def _constant(name: str) -> Any:
    raise JsonValueError(f"{name} is not a number a record can hold")


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise JsonValueError(f"{text} is too large for a float")
    return value


def _int(text: str) -> int:
    value = int(text)
    if abs(value) > MAX_INT:
        raise JsonValueError(f"{text[:20]}{'…' if len(text) > 20 else ''} is too large (> 2**62)")
    return value


def parse_json(text: str) -> Any:
    """`json.loads`, rejecting NaN, infinities and out-of-range numbers (ValueError)."""
    return json.loads(text, parse_constant=_constant, parse_float=_float, parse_int=_int)


@contextmanager
def replace_atomically(path: Path) -> Iterator[Path]:
    """Yield a temporary path beside `path`; on success rename it to `path`, else remove it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.stem}.{os.getpid()}.tmp{path.suffix}")
    try:
        yield temporary
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def write_text(path: Path, text: str) -> None:
    """`text` to `path`, atomically."""
    with replace_atomically(path) as temporary:
        temporary.write_text(text)
