"""Trace files: the Vidur/Sarathi CSV and the Azure LLM inference trace, detected by header.

- Vidur/Sarathi (microsoft/vidur and microsoft/sarathi-serve, data/processed_traces):
  ``num_prefill_tokens,num_decode_tokens[,num_total_tokens,pd_ratio][,arrived_at]``, columns in
  any order, ``arrived_at`` in seconds.
- Azure LLM inference trace (Azure/AzurePublicDataset, AzureLLMInferenceTrace_{code,conv}):
  ``TIMESTAMP,ContextTokens,GeneratedTokens``, TIMESTAMP an ISO date-time such as
  ``2023-11-16 18:15:46.6805900`` (UTC when it has no offset) or a number of seconds.

Arrival times become seconds from the first request; they must not decrease. Files are UTF-8,
with or without a byte-order mark.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from pathlib import Path

import attrs
import numpy as np
from numpy.typing import NDArray

from slidingpolicy._arrays import read_only
from slidingpolicy._parse import MAX_TOKENS, read_csv
from slidingpolicy._paths import StrPath
from slidingpolicy._validate import MAX_SECONDS
from slidingpolicy.errors import TraceFormatError

FORMATS = (
    "accepted formats: Vidur/Sarathi CSV (num_prefill_tokens,num_decode_tokens"
    "[,num_total_tokens,pd_ratio][,arrived_at]) or Azure LLM inference trace "
    "(TIMESTAMP,ContextTokens,GeneratedTokens)"
)
VIDUR = ("num_prefill_tokens", "num_decode_tokens", "arrived_at")
AZURE = ("ContextTokens", "GeneratedTokens", "TIMESTAMP")


@attrs.frozen(slots=True)
class Trace:
    """A trace's prompt and output lengths, and its arrival times when it has them."""

    path: str
    format: str
    prompt_tokens: NDArray[np.int64]
    output_tokens: NDArray[np.int64]
    arrivals: NDArray[np.float64] | None

    def __len__(self) -> int:
        return int(self.prompt_tokens.size)


def load_trace(path: StrPath) -> Trace:
    """Read a trace file of either format (module docstring); malformed input names file:line."""
    path = Path(path)
    table = read_csv(path, TraceFormatError, FORMATS)
    header = table.header
    if all(name in header for name in VIDUR[:2]):
        kind, (prompt_col, output_col, time_col) = "vidur", VIDUR
    elif all(name in header for name in AZURE):
        kind, (prompt_col, output_col, time_col) = "azure", AZURE
    else:
        raise TraceFormatError(f"{path}:1: unrecognized header {list(header)}; {FORMATS}")
    p, o = table.column(prompt_col), table.column(output_col)
    t = table.column(time_col) if time_col in header else None
    prompts: list[int] = []
    outputs: list[int] = []
    times: list[float] = []
    for line, row in table.rows:
        if len(row) != len(header):
            raise TraceFormatError(
                f"{path}:{line}: {len(row)} fields, header has {len(header)}; {FORMATS}"
            )
        prompts.append(_count(path, line, prompt_col, row[p]))
        outputs.append(_count(path, line, output_col, row[o]))
        if t is not None:
            times.append(_time(path, line, time_col, row[t]))
            if len(times) > 1 and times[-1] < times[-2]:
                raise TraceFormatError(f"{path}:{line}: {time_col} goes back in time; {FORMATS}")
    if not prompts:
        raise TraceFormatError(f"{path}:2: no requests; {FORMATS}")
    arrivals = None
    if t is not None:
        arrivals = read_only(np.array(times, dtype=np.float64) - times[0])
    return Trace(
        path=str(path),
        format=kind,
        prompt_tokens=read_only(np.array(prompts, dtype=np.int64)),
        output_tokens=read_only(np.array(outputs, dtype=np.int64)),
        arrivals=arrivals,
    )


def _count(path: Path, line: int, field: str, text: str) -> int:
    """A token count >= 1, written as an integer (``12`` or ``12.0``)."""
    try:
        value = float(text)
    except ValueError:
        raise TraceFormatError(
            f"{path}:{line}: {field}={text!r} is not a number; {FORMATS}"
        ) from None
    if not (math.isfinite(value) and value == int(value) and 1 <= value <= MAX_TOKENS):
        raise TraceFormatError(
            f"{path}:{line}: {field}={text!r} must be an int >= 1, <= {MAX_TOKENS:.0e}; {FORMATS}"
        )
    return int(value)


def _time(path: Path, line: int, field: str, text: str) -> float:
    """Seconds: a number from 0 to `MAX_SECONDS`, or an ISO date-time (naive means UTC)."""
    try:
        value = float(text)
    except ValueError:
        try:
            moment = datetime.fromisoformat(text.strip())
        except ValueError:
            raise TraceFormatError(
                f"{path}:{line}: {field}={text!r} is neither seconds nor a date-time; {FORMATS}"
            ) from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return moment.timestamp()
    if not (math.isfinite(value) and value >= 0):
        raise TraceFormatError(
            f"{path}:{line}: {field}={text!r} must be finite and >= 0; {FORMATS}"
        )
    if value > MAX_SECONDS:
        raise TraceFormatError(
            f"{path}:{line}: {field}={text!r} is beyond {MAX_SECONDS:g} s (317 years), the "
            f"longest time a record holds; {FORMATS}"
        )
    return value
