"""A latency model from measured per-operator timings (Vidur's profiling CSV), attention from
the roofline.

Vidur (microsoft/vidur, data/profiling) times every non-attention operator of a model for a
grid of token counts and tensor-parallel degrees; columns ``time_stats.<op>.{min,max,mean,
median,std}`` in ms, ``num_tokens``, ``num_tensor_parallel_workers``, and the model shape
(``n_head``, ``n_kv_head``, ``n_embd``, ``n_expanded_embd``, ``vocab_size``).

What we sum, following Vidur's ``ExecutionTime`` (vidur/entities/execution_time.py):

- per layer, once each: ``input_layernorm``, ``attn_pre_proj``, ``attn_rope``,
  ``attn_post_proj``, ``post_attention_layernorm``, ``mlp_up_proj``, ``mlp_act``,
  ``mlp_down_proj``, ``add``; times the number of layers;
- once per iteration: ``emb`` when the file has it (Vidur leaves it out; it is measured, so we
  count it).

We take the median of each operator and average rows that repeat a (num_tokens, tp) pair; the
sums are kept as measured, dips included (a dip is cuBLAS choosing a faster kernel at that
size: a real sweet spot, not noise to level). Between grid points time is a step, not a ramp:
t tokens take the time measured at the smallest grid point >= t. Vidur's grid is every 8 tokens
to 1024 (16 to 2048, 32 to 4096, 64 to 8192), so the edges of GEMM tiles (multiples of 64 or
128 rows) are grid points, and a batch inside a gap runs the tiles of the gap's upper end
(129 tokens need the two 128-row tiles that 136 needs). Past the last point time grows from the
grid's monotone envelope (its running maximum, the least non-decreasing series above it) at the
envelope's mean rate over the grid's top half: one 32-token segment's slope is noise at 1 %,
and a batch past the grid must not cost less than a smaller measured one. `from_csv` warns
(`ProfileEnvelopeWarning`) when the last points lie below the envelope. No dip is refused for
its size (inside the grid kernel choices make dips of 13 %); what no kernel can take is: a time
< 0 or not finite, 0 tokens. Attention, the tensor-parallel all-reduces, the LM head and the
per-iteration overhead come from the roofline model, which also gives the KV capacity.
"""

from __future__ import annotations

import bisect
import math
import warnings
from pathlib import Path

import attrs
import numpy as np

from slidingpolicy._arrays import float_read_only
from slidingpolicy._parse import MAX_TOKENS, CsvTable, read_csv
from slidingpolicy._paths import StrPath
from slidingpolicy.errors import (
    InvalidRecordError,
    ProfileEnvelopeWarning,
    TraceFormatError,
    UnknownNameError,
)
from slidingpolicy.hardware.batch_summary import FloatArray
from slidingpolicy.hardware.overlay import DenseOverlay
from slidingpolicy.hardware.roofline import RooflineModel

PER_LAYER_OPS = (
    "input_layernorm",
    "attn_pre_proj",
    "attn_rope",
    "attn_post_proj",
    "post_attention_layernorm",
    "mlp_up_proj",
    "mlp_act",
    "mlp_down_proj",
    "add",
)
PER_ITERATION_OPS = ("emb",)
FORMAT = (
    "accepted format: Vidur profiling CSV with columns num_tokens, "
    "num_tensor_parallel_workers and time_stats.<op>.median (ms) for op in "
    + ", ".join(PER_LAYER_OPS)
)
SHAPE_COLUMNS = {
    "n_head": "heads",
    "n_kv_head": "kv_heads",
    "n_embd": "hidden",
    "n_expanded_embd": "intermediate",
    "vocab_size": "vocab",
}


@attrs.frozen(slots=True)
class ProfiledModel(DenseOverlay):
    """Measured linear and element-wise time at `num_tokens`; the rest from `roofline`."""

    roofline: RooflineModel
    source: str
    num_tokens: FloatArray = attrs.field(converter=float_read_only)
    dense_seconds: FloatArray = attrs.field(converter=float_read_only)
    _grid: tuple[float, ...] = attrs.field(init=False, eq=False, repr=False)
    _seconds: tuple[float, ...] = attrs.field(init=False, eq=False, repr=False)
    _base: float = attrs.field(init=False, eq=False, repr=False)
    _rate: float = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        record = f"profile {self.source!r}"
        if self.num_tokens.ndim != 1 or self.num_tokens.shape != self.dense_seconds.shape:
            raise InvalidRecordError(record, "num_tokens", "must be 1-D like dense_seconds")
        if self.num_tokens.size < 2 or np.any(np.diff(self.num_tokens) <= 0):
            raise InvalidRecordError(record, "num_tokens", "needs >= 2 increasing token counts")
        if not np.all(np.isfinite(self.dense_seconds)) or np.any(self.dense_seconds < 0):
            raise InvalidRecordError(record, "dense_seconds", "must be finite and >= 0")
        grid, envelope = self.num_tokens, monotone_envelope(self.dense_seconds)
        half = max(0, int(np.searchsorted(grid, grid[-1] / 2, side="right")) - 1)
        rate = (envelope[-1] - envelope[half]) / (grid[-1] - grid[half])
        object.__setattr__(self, "_grid", tuple(grid.tolist()))
        object.__setattr__(self, "_seconds", tuple(self.dense_seconds.tolist()))
        object.__setattr__(self, "_base", float(envelope[-1]))
        object.__setattr__(self, "_rate", float(rate))

    @classmethod
    def from_csv(cls, path: StrPath, roofline: RooflineModel) -> ProfiledModel:
        """Read a Vidur profile for `roofline`'s model and tensor-parallel degree."""
        path = Path(path)
        tokens, seconds = read_profile(path, roofline)
        profiled = cls(
            roofline=roofline, source=path.name, num_tokens=tokens, dense_seconds=seconds
        )
        below, dip = _end_below_envelope(profiled.dense_seconds)
        if below:
            warnings.warn(
                f"{path} (tp {roofline.tp}): the last {below} of {seconds.size} points "
                f"{'lies' if below == 1 else 'lie'} below an earlier one (at most {dip:.1%}); "
                f"past {tokens[-1]:.0f} tokens time grows from their monotone envelope "
                f"({1e3 * profiled._base:.4g} ms)",
                ProfileEnvelopeWarning,
                stacklevel=2,
            )
        return profiled

    @property
    def name(self) -> str:
        """The roofline's name and the profile file."""
        return f"{self.roofline.name}, profiled ({self.source})"

    def _dense_time(self, tokens: float) -> float:
        """`_dense_times` of one token count, on Python floats (the same values)."""
        grid = self._grid
        if tokens > grid[-1]:
            return self._base + self._rate * (tokens - grid[-1])
        return self._seconds[bisect.bisect_left(grid, tokens)]

    def _dense_times(self, tokens: FloatArray) -> FloatArray:
        """The time of the smallest grid point >= tokens; past the grid, the envelope grown at
        the top half's rate."""
        grid, seconds = self.num_tokens, self.dense_seconds
        beyond = self._base + self._rate * (tokens - grid[-1])
        inside = seconds[np.minimum(np.searchsorted(grid, tokens, side="left"), grid.size - 1)]
        return np.where(tokens > grid[-1], beyond, inside)


def monotone_envelope(seconds: FloatArray) -> FloatArray:
    """The least non-decreasing series >= `seconds` (its running maximum)."""
    envelope: FloatArray = np.maximum.accumulate(seconds)
    return envelope


def _end_below_envelope(seconds: FloatArray) -> tuple[int, float]:
    """How many of the last points lie below an earlier one, and the largest relative dip."""
    envelope = monotone_envelope(seconds)
    below = int(seconds.size - 1 - np.flatnonzero(seconds == envelope[-1])[-1])
    if below == 0:
        return 0, 0.0
    return below, float(np.max(1 - seconds[-below:] / envelope[-1]))


def read_profile(path: StrPath, roofline: RooflineModel) -> tuple[FloatArray, FloatArray]:
    """Token grid and summed non-attention seconds per iteration, from a Vidur profile CSV."""
    path = Path(path)
    sums, seen_tp = _read_rows(read_csv(path, TraceFormatError, FORMAT), roofline)
    if roofline.tp not in seen_tp:
        raise UnknownNameError(
            f"tensor-parallel degree in {path.name}", str(roofline.tp), [str(t) for t in seen_tp]
        )
    grid = np.array(sorted(sums), dtype=np.float64)
    return grid, np.array([sum(sums[int(t)]) / len(sums[int(t)]) for t in grid])


def _read_rows(table: CsvTable, roofline: RooflineModel) -> tuple[dict[int, list[float]], set[int]]:
    """Seconds per iteration at each token count of `roofline.tp`, and every tp in the file."""
    path, header = table.path, table.header
    if not header:
        raise TraceFormatError(f"{path}:1: empty file; {FORMAT}")
    column = {name: index for index, name in enumerate(header)}
    wanted = [f"time_stats.{op}.median" for op in PER_LAYER_OPS]
    required = ("num_tokens", "num_tensor_parallel_workers", *wanted)
    missing = [name for name in required if name not in column]
    if missing:
        raise TraceFormatError(f"{path}:1: missing column(s) {', '.join(missing)}; {FORMAT}")
    once = [f"time_stats.{op}.median" for op in PER_ITERATION_OPS]
    once = [name for name in once if name in column]
    sums: dict[int, list[float]] = {}
    seen_tp: set[int] = set()
    for line, row in table.rows:
        if len(row) != len(header):
            raise TraceFormatError(
                f"{path}:{line}: {len(row)} fields, header has {len(header)}; {FORMAT}"
            )
        tp = _int(path, line, row[column["num_tensor_parallel_workers"]], "tp")
        seen_tp.add(tp)
        if tp != roofline.tp:
            continue
        _check_shape(path, line, row, column, roofline)
        tokens = _int(path, line, row[column["num_tokens"]], "num_tokens")
        layer = sum(_ms(path, line, row[column[name]], name) for name in wanted)
        iteration = sum(_ms(path, line, row[column[name]], name) for name in once)
        seconds = 1e-3 * (roofline.model.layers * layer + iteration)
        sums.setdefault(tokens, []).append(seconds)
    if not seen_tp:
        raise TraceFormatError(f"{path}:2: a header but no data rows; {FORMAT}")
    return sums, seen_tp


def _int(path: Path, line: int, text: str, field: str) -> int:
    try:
        number = float(text)
    except ValueError:
        raise TraceFormatError(
            f"{path}:{line}: {field}={text!r} is not a number; {FORMAT}"
        ) from None
    if not (math.isfinite(number) and number == int(number) and 1 <= number <= MAX_TOKENS):
        raise TraceFormatError(
            f"{path}:{line}: {field}={text!r} must be an int >= 1, <= {MAX_TOKENS:.0e}; {FORMAT}"
        )
    return int(number)


def _ms(path: Path, line: int, text: str, field: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise TraceFormatError(
            f"{path}:{line}: {field}={text!r} is not a number; {FORMAT}"
        ) from None
    if not (math.isfinite(value) and value >= 0):
        raise TraceFormatError(f"{path}:{line}: {field}={text!r} must be finite and >= 0; {FORMAT}")
    return value


def _check_shape(
    path: Path, line: int, row: list[str], column: dict[str, int], roofline: RooflineModel
) -> None:
    """The profile must describe the roofline's model, where the file gives the shape."""
    for name, attribute in SHAPE_COLUMNS.items():
        if name in column:
            value = _int(path, line, row[column[name]], name)
            expected = getattr(roofline.model, attribute)
            if value != expected:
                raise InvalidRecordError(
                    f"profile {path.name}:{line}",
                    name,
                    f"={value} but model {roofline.model.name!r} has {attribute}={expected}",
                )
