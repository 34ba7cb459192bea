"""What every file reader shares: bounded reads, and JSON and CSV parsed with limits.

Every entry point that reads a file (a predictor, a trace, a hardware profile, a samples
file, a `check` log, a reproduction's results) reads it here, so the same limits hold for all:

- **size**: a whole file is read up to `limit` bytes, a line up to `line_limit` bytes, then
  the read stops with an error: `/dev/zero`, a pipe that never ends or one endless line fails
  in bounded memory and time, never with a MemoryError;
- **depth**: JSON nested deeper than `MAX_DEPTH` fails before the parser recurses (no record
  nests more than four levels), never with a RecursionError;
- **numbers**: NaN, infinities, numbers beyond a float's range and integers beyond 2**62,
  which Python's json module lets through, fail;
- **CSV**: a header that names a column twice fails (which one would a row mean?);
- **text**: bytes that are not UTF-8 fail with file:line; a byte-order mark is dropped.

A failure is the reader's own `SlidingPolicyError` subclass (`error`), naming the file, the
line where there is one, and the formats the reader accepts (`formats`).
"""

from __future__ import annotations

import csv
import itertools
import json
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import attrs
import numpy as np

from slidingpolicy._paths import StrPath
from slidingpolicy.errors import SlidingPolicyError

MAX_INT = 2**62
"""The largest integer a JSON document may hold (it fits in int64)."""
MAX_TOKENS = 10**9
"""The largest token count a file may give: far above any context, far below int64."""
MAX_DEPTH = 32
"""The deepest a JSON document may nest (a `check` log line nests four levels)."""
MAX_DOCUMENT = 16 * 2**20
"""The largest JSON document read whole (a predictor is about 1 KB, a report's results
about 130 KB)."""
MAX_TABLE = 512 * 2**20
"""The largest CSV or JSONL file whose rows are kept (a trace, a profile, samples)."""
MAX_CSV_LINE = 2**20
"""The longest line of a CSV file (a trace row is tens of bytes)."""
MAX_JSON_LINE = 64 * 2**20
"""The longest line of a JSONL file (a `check` log line holds one state, about 200 bytes a
live request: 300,000 of them)."""

ErrorType = type[SlidingPolicyError]


class JsonValueError(ValueError):
    """JSON that Python would parse but no record can hold: a number out of range, or nesting
    deeper than `MAX_DEPTH`."""


def _size(limit: int) -> str:
    return f"{limit / 2**20:g} MiB"


def _open(path: Path, error: ErrorType, formats: str) -> BinaryIO:
    """`path` opened for reading bytes, or `error` saying why it cannot be."""
    try:
        return path.open("rb")
    except IsADirectoryError:
        raise error(f"{path}: cannot read (it is a directory, not a file); {formats}") from None
    except FileNotFoundError:
        raise error(f"{path}: cannot read (no such file); {formats}") from None
    except OSError as problem:
        raise error(f"{path}: cannot read ({problem.strerror}); {formats}") from None


def _decode(data: bytes, path: Path, line: int, error: ErrorType, formats: str) -> str:
    """UTF-8 text (a byte-order mark at the start of the file dropped), or `error` naming the
    line of the first bad byte (`data` starts on line `line`)."""
    try:
        return data.decode("utf-8-sig" if line == 1 else "utf-8")
    except UnicodeDecodeError as problem:
        line += data[: problem.start].count(b"\n")
        raise error(f"{path}:{line}: not UTF-8 text (a binary file?); {formats}") from None


def read_text(path: StrPath, error: ErrorType, formats: str, limit: int = MAX_DOCUMENT) -> str:
    """The whole file as text, at most `limit` bytes of it (module docstring)."""
    path = Path(path)
    with _open(path, error, formats) as handle:
        try:
            data = handle.read(limit + 1)
        except OSError as problem:
            raise error(f"{path}: cannot read ({problem.strerror}); {formats}") from None
    if len(data) > limit:
        raise error(f"{path}: larger than {_size(limit)}, the most read of such a file; {formats}")
    return _decode(data, path, 1, error, formats)


def lines(
    path: StrPath,
    error: ErrorType,
    formats: str,
    line_limit: int,
    limit: int | None = MAX_TABLE,
) -> Iterator[tuple[int, str]]:
    """(number, text) of each line of the file, endings kept, one line in memory at a time:
    at most `line_limit` bytes a line and `limit` in all (None: no total, for a reader that
    keeps nothing of a line once read)."""
    path = Path(path)
    total = 0
    with _open(path, error, formats) as handle:
        for number in itertools.count(1):
            try:
                data = handle.readline(line_limit + 1)
            except OSError as problem:
                reason = problem.strerror
                raise error(f"{path}:{number}: cannot read ({reason}); {formats}") from None
            if not data:
                return
            if len(data) > line_limit:
                raise error(
                    f"{path}:{number}: a line longer than {_size(line_limit)}, the most read "
                    f"of such a file; {formats}"
                )
            total += len(data)
            if limit is not None and total > limit:
                raise error(
                    f"{path}:{number}: larger than {_size(limit)}, the most read of such a "
                    f"file; {formats}"
                )
            yield number, _decode(data, path, number, error, formats)


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_OPEN = (ord("["), ord("{"))
_BRACKETS = (*_OPEN, ord("]"), ord("}"))


def too_deep(text: str) -> bool:
    """Whether the arrays and objects of JSON `text` nest deeper than `MAX_DEPTH` (brackets
    inside strings aside); counted only where it has more opening brackets than that."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return False
    codes = np.frombuffer(_STRING.sub("", text).encode(), dtype=np.uint8)
    brackets = codes[np.isin(codes, _BRACKETS)]
    steps = np.where(np.isin(brackets, _OPEN), 1, -1).astype(np.int32)
    return int(np.cumsum(steps).max(initial=0)) > MAX_DEPTH


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
    """`json.loads` within the limits of the module docstring; a ValueError (JsonValueError,
    or json's JSONDecodeError) otherwise."""
    if too_deep(text):
        raise JsonValueError(f"nested deeper than {MAX_DEPTH} levels")
    return json.loads(text, parse_constant=_constant, parse_float=_float, parse_int=_int)


def json_problem(problem: ValueError) -> str:
    """What is wrong with a JSON text `parse_json` refused, in a few words."""
    if isinstance(problem, json.JSONDecodeError):
        return f"not JSON: {problem.msg} at line {problem.lineno} column {problem.colno}"
    return f"not JSON a record can hold: {problem}"


def read_json(path: StrPath, error: ErrorType, formats: str) -> Any:
    """The JSON document in `path` (at most `MAX_DOCUMENT` bytes), parsed by `parse_json`."""
    text = read_text(path, error, formats)
    try:
        return parse_json(text)
    except ValueError as problem:
        raise error(f"{path}: {json_problem(problem)}; {formats}") from None


@attrs.frozen(slots=True)
class CsvTable:
    """A CSV file's header (names stripped of spaces, each once) and its rows, read as they are
    iterated: (line, fields), the line the row ends on."""

    path: Path
    header: tuple[str, ...]
    rows: Iterator[tuple[int, list[str]]]

    def column(self, name: str) -> int:
        """The index of column `name` (it must be in the header)."""
        return self.header.index(name)


def read_csv(path: StrPath, error: ErrorType, formats: str) -> CsvTable:
    """The CSV file's header and its rows (module docstring's limits; malformed quoting names
    file:line); an empty file has an empty header."""
    path = Path(path)
    reader = csv.reader(text for _, text in lines(path, error, formats, MAX_CSV_LINE))
    try:
        header = tuple(name.strip() for name in next(reader, []))
    except csv.Error as problem:
        raise error(f"{path}:1: {problem}; {formats}") from None
    repeated = sorted({name for name in header if header.count(name) > 1})
    if repeated:
        raise error(
            f"{path}:1: the header names column {', '.join(map(repr, repeated))} twice; {formats}"
        )
    return CsvTable(path, header, _rows(reader, path, error, formats))


def _rows(
    reader: Any, path: Path, error: ErrorType, formats: str
) -> Iterator[tuple[int, list[str]]]:
    """The non-empty rows after the header, with the line each ends on."""
    try:
        for row in reader:
            if row:
                yield reader.line_num, row
    except csv.Error as problem:
        raise error(f"{path}:{reader.line_num}: {problem}; {formats}") from None
