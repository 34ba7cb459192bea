"""The tile-quantized roofline: GEMM time as a staircase of tiles and waves, not a smooth ramp.

A GPU computes a (M × K) · (K × N) product in output tiles of `rows` × `cols`, one tile per SM
at a time: ceil(M / rows) · ceil(N / cols) tiles run in waves of `sms` tiles, and every wave
costs a full tile's work whether its tiles are full or not (tile quantization: a 129-row
product pays for 256 rows; wave quantization: 109 tiles on 108 SMs take two waves). The
library (cuBLAS) picks, per shape, the fastest of a few tile heights; a smaller tile wastes
less padding but reaches a lower fraction of peak. So, per GEMM on one GPU:

    compute(M) = min over tiles of (waves(M) + ramp_waves) · 2 · rows · cols · K · sms
                                                          / (peak · efficiency)
    time(M)    = max(dt · (K·N + M·(K + N)) / (bandwidth · memory_efficiency), compute(M))

`ramp_waves` is a fixed cost per GEMM (prologue, epilogue, pipeline fill) in units of one wave:
the efficiency climbs as waves / (waves + ramp_waves), with the tile choice, as M grows. Every
term is non-decreasing in M (waves are, a minimum and a maximum of non-decreasing functions
are), so the time of an iteration never falls when it gets a token more; the compute term is
constant between multiples of the tile heights, where the steps are.

The four per-layer GEMMs (QKV, O, gate-up, down) are quantized; the LM head (M = requests,
not tokens), element-wise ops, embedding, attention, all-reduces, overhead, noise and KV
capacity are the roofline's (`overlay.DenseOverlay`).

Parameters (`TILINGS`):

- ``a100-80g``: 108 SMs (NVIDIA A100 Tensor Core GPU Architecture whitepaper, SXM4); tiles,
  efficiencies and ramp fitted to Vidur's measured A100 profile of Llama-3-8B (microsoft/vidur,
  data/profiling, MIT; TP1 GEMMs, 1-8192 tokens) by ``scripts/fit_quantized.py``: rows 64 and
  128 (CUTLASS's Ampere bf16 tile heights), 64 columns, which the fit chose among 64/128/256
  columns. Its error per token range is in docs/hardware.md.
- ``rtx3090``: no public measured profile. Derived from the architecture: 82 SMs (NVIDIA Ampere
  GA102 whitepaper, Table 9); GA102 runs the same Ampere tensor-core kernels (same tile shapes),
  so the tiles, efficiencies and ramp are the A100 fit's; only the SM count and the peak differ.
- ``h100``: no public measured profile. 132 SMs (NVIDIA H100 whitepaper, SXM5); Hopper's
  warpgroup kernels use 128-column tiles with 64- or 128-row heights (CUTLASS 3 defaults for
  bf16); efficiencies and ramp borrowed from the A100 fit.
"""

from __future__ import annotations

import math

import attrs
import numpy as np

from slidingpolicy.errors import InvalidRecordError
from slidingpolicy.hardware.batch_summary import FloatArray
from slidingpolicy.hardware.overlay import DenseOverlay
from slidingpolicy.hardware.roofline import RooflineModel


def _count(record: str, field: str, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidRecordError(record, field, f"={value!r} must be an int >= 1")


@attrs.frozen(slots=True)
class Tile:
    """One output tile shape: `rows` (tokens) × `cols`, at `efficiency` of an SM's peak."""

    rows: int
    cols: int
    efficiency: float

    def __attrs_post_init__(self) -> None:
        record = f"tile {self.rows}x{self.cols}"
        _count(record, "rows", self.rows)
        _count(record, "cols", self.cols)
        if not (math.isfinite(self.efficiency) and 0.0 < self.efficiency <= 1.0):
            raise InvalidRecordError(record, "efficiency", f"={self.efficiency} must be in (0, 1]")


@attrs.frozen(slots=True)
class GemmTiling:
    """How one GPU runs a GEMM: its SMs, the tiles its library picks from, and the ramp."""

    gpu: str
    sms: int
    tiles: tuple[Tile, ...]
    ramp_waves: float

    def __attrs_post_init__(self) -> None:
        record = f"tiling {self.gpu!r}"
        _count(record, "sms", self.sms)
        if not self.tiles:
            raise InvalidRecordError(record, "tiles", "needs at least one tile")
        if not (math.isfinite(self.ramp_waves) and self.ramp_waves >= 0):
            raise InvalidRecordError(record, "ramp_waves", f"={self.ramp_waves} must be >= 0")


A100_FIT = (Tile(64, 64, 0.623), Tile(128, 64, 0.738))
"""`scripts/fit_quantized.py` on the Vidur A100 profile (module docstring)."""
A100_RAMP = 0.068

TILINGS: dict[str, GemmTiling] = {
    t.gpu: t
    for t in (
        GemmTiling("rtx3090", 82, A100_FIT, A100_RAMP),
        GemmTiling("a100-80g", 108, A100_FIT, A100_RAMP),
        GemmTiling("h100", 132, (Tile(64, 128, 0.623), Tile(128, 128, 0.738)), A100_RAMP),
    )
}


@attrs.frozen(slots=True)
class GemmTerms:
    """One GEMM's constants: weight bytes, bytes per token, and per tile (rows, column tiles,
    seconds per wave)."""

    weight_bytes: int
    token_bytes: int
    tiles: tuple[tuple[int, int, float], ...]


@attrs.frozen(slots=True)
class QuantizedRooflineModel(DenseOverlay):
    """`roofline` with its four per-layer GEMMs quantized by `tiling` (module docstring)."""

    roofline: RooflineModel
    tiling: GemmTiling
    _gemms: tuple[GemmTerms, ...] = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        r = self.roofline
        peak, sms, dt = r.gpu.peak_flops, self.tiling.sms, r.model.dtype_bytes
        gemms = tuple(
            GemmTerms(
                dt * k * n,
                dt * (k + n),
                tuple(
                    (
                        t.rows,
                        -(-n // t.cols),
                        2.0 * t.rows * t.cols * k * sms / (peak * t.efficiency),
                    )
                    for t in self.tiling.tiles
                ),
            )
            for k, n in r.terms.gemms
        )
        object.__setattr__(self, "_gemms", gemms)

    @property
    def name(self) -> str:
        """The roofline's name, tile-quantized."""
        return f"{self.roofline.name}, tile-quantized"

    def gemm_time(self, tokens: float, index: int) -> float:
        """Seconds of per-layer GEMM `index` (QKV, O, gate-up, down) at `tokens` rows."""
        g = self._gemms[index]
        sms, ramp = self.tiling.sms, self.tiling.ramp_waves
        compute = math.inf
        for rows, col_tiles, seconds in g.tiles:
            waves = math.ceil(math.ceil(tokens / rows) * col_tiles / sms)
            compute = min(compute, (waves + ramp) * seconds)
        memory = (g.weight_bytes + tokens * g.token_bytes) / self.roofline.terms.bandwidth
        return max(memory, compute)

    def _dense_time(self, tokens: float) -> float:
        """`_dense_times` of one token count, on Python floats in the same order."""
        t = self.roofline.terms
        per_layer = 0.0
        for index in range(len(self._gemms)):
            per_layer += self.gemm_time(tokens, index)
        per_layer += tokens * t.elementwise / t.bandwidth
        return t.layers * per_layer + tokens * t.embedding / t.bandwidth

    def _dense_times(self, tokens: FloatArray) -> FloatArray:
        """Quantized GEMM, element-wise and embedding time of each token count."""
        t = self.roofline.terms
        per_layer = np.zeros_like(tokens)
        for index in range(len(self._gemms)):
            per_layer += self.gemm_times(tokens, index)
        per_layer += tokens * t.elementwise / t.bandwidth
        return t.layers * per_layer + tokens * t.embedding / t.bandwidth

    def gemm_times(self, tokens: FloatArray, index: int) -> FloatArray:
        """`gemm_time` of each token count, on numpy arrays (the same values)."""
        g = self._gemms[index]
        sms, ramp = self.tiling.sms, self.tiling.ramp_waves
        compute = np.full_like(tokens, math.inf)
        for rows, col_tiles, seconds in g.tiles:
            waves = np.ceil(np.ceil(tokens / rows) * col_tiles / sms)
            compute = np.minimum(compute, (waves + ramp) * seconds)
        memory = (g.weight_bytes + tokens * g.token_bytes) / self.roofline.terms.bandwidth
        return np.maximum(memory, compute)
