"""Fit the A100 tiling of the quantized roofline to Vidur's measured GEMM times; print the
fitted parameters and the error per token range (the tables of docs/hardware.md).

Usage: python scripts/fit_quantized.py --data /work/shared/data

The fit: tile heights 64 and 128 rows (CUTLASS's Ampere bf16 tiles), the column width chosen
among 64, 128 and 256, and for each width the two efficiencies and the ramp by Nelder-Mead on
the mean squared log error of the summed per-layer GEMM time (QKV, O, gate-up, down) of
Llama-3-8B at TP1, over every measured token count from 1 to 8192. The memory side is the
roofline's (75 % of 2.039 TB/s).
"""

from __future__ import annotations

import argparse
import csv
from collections import defaultdict
from pathlib import Path

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import minimize

from slidingpolicy.hardware import (
    GemmTiling,
    ProfiledModel,
    QuantizedRooflineModel,
    RooflineModel,
    Tile,
    build_hardware,
    gpu,
    model,
)
from slidingpolicy.hardware.quantized import TILINGS

FloatArray = NDArray[np.float64]

PROFILE = "profiles/vidur-a100-llama3-8b/mlp.csv"
GEMM_OPS = ("attn_pre_proj", "attn_post_proj", "mlp_up_proj", "mlp_down_proj")
"""Vidur's names of the roofline's four per-layer GEMMs, in its order (QKV, O, gate-up, down)."""
ROWS = (64, 128)
COLUMNS = (64, 128, 256)
FIT_TOKENS = 8192
RANGES = ((1, 63), (64, 511), (512, 2047), (2048, 8192))


def measured_gemms(path: Path, tp: int) -> tuple[FloatArray, FloatArray]:
    """Token counts and the summed per-layer GEMM seconds (medians, repeats averaged)."""
    sums: dict[int, list[float]] = defaultdict(list)
    with path.open(newline="") as handle:
        for row in csv.DictReader(handle):
            if int(row["num_tensor_parallel_workers"]) == tp:
                ms = sum(float(row[f"time_stats.{op}.median"]) for op in GEMM_OPS)
                sums[int(row["num_tokens"])].append(1e-3 * ms)
    tokens = np.array(sorted(sums), dtype=np.float64)
    return tokens, np.array([np.mean(sums[int(t)]) for t in tokens])


def gemm_sum(hw: QuantizedRooflineModel, tokens: FloatArray) -> FloatArray:
    """The model's summed per-layer GEMM seconds at each token count."""
    total = np.zeros_like(tokens)
    for index in range(len(GEMM_OPS)):
        total += hw.gemm_times(tokens, index)
    return total


def tiled(roofline: RooflineModel, columns: int, x: FloatArray) -> QuantizedRooflineModel:
    """The A100 roofline quantized with efficiencies x[:-1] (per height) and ramp x[-1]."""
    tiles = tuple(Tile(r, columns, float(e)) for r, e in zip(ROWS, x[:-1], strict=True))
    return QuantizedRooflineModel(roofline, GemmTiling("a100-80g", 108, tiles, float(x[-1])))


def fit(roofline: RooflineModel, tokens: FloatArray, seconds: FloatArray) -> GemmTiling:
    """The tiling of least mean squared log error (module docstring)."""
    best: tuple[float, GemmTiling] | None = None
    for columns in COLUMNS:

        def loss(x: FloatArray, columns: int = columns) -> float:
            if np.any(x[:-1] <= 0.05) or np.any(x[:-1] > 1.0) or x[-1] < 0:
                return 1e9
            predicted = gemm_sum(tiled(roofline, columns, x), tokens)
            return float(np.mean(np.log(predicted / seconds) ** 2))

        for start in ([0.7, 0.7, 0.2], [0.5, 0.5, 0.5]):
            found = minimize(loss, np.array(start), method="Nelder-Mead", options={"xatol": 1e-4})
            x = np.round(found.x, 3)
            candidate = (loss(x), tiled(roofline, columns, x).tiling)
            if best is None or candidate[0] < best[0]:
                best = candidate
    assert best is not None
    return best[1]


def error_rows(name: str, predicted: FloatArray, measured: FloatArray, tokens: FloatArray) -> None:
    """One line per token range: signed mean, mean absolute and max relative error."""
    relative = predicted / measured - 1.0
    for lo, hi in RANGES:
        inside = (tokens >= lo) & (tokens <= hi)
        r = relative[inside]
        print(
            f"| {name} | {lo}-{hi} | {inside.sum()} | {100 * r.mean():+.1f} % "
            f"| {100 * np.abs(r).mean():.1f} % | {100 * np.abs(r).max():.1f} % |"
        )


def main() -> None:
    """Fit on TP1, then report the error of the fit and of the smooth roofline."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, required=True, help="the reference data folder")
    args = parser.parse_args()
    path = args.data / PROFILE
    a100 = RooflineModel(gpu("a100-80g"), model("llama3-8b"), 1)
    tokens, seconds = measured_gemms(path, 1)
    inside = tokens <= FIT_TOKENS
    fitted = fit(a100, tokens[inside], seconds[inside])
    print("fitted A100 tiling:", fitted)
    print("packaged A100 tiling:", TILINGS["a100-80g"])
    print()
    print("| model | tokens | points | bias | mean abs. error | max abs. error |")
    print("| --- | --- | --- | --- | --- | --- |")
    for tp in (1, 2):
        roofline = RooflineModel(gpu("a100-80g"), model("llama3-8b"), tp)
        measured = build_hardware("a100-80g-measured", "llama3-8b", tp)
        assert isinstance(measured, ProfiledModel)
        grid = np.asarray(measured.num_tokens)
        keep = grid <= FIT_TOKENS
        grid, dense = grid[keep], np.asarray(measured.dense_seconds)[keep]
        quantized = QuantizedRooflineModel(roofline, TILINGS["a100-80g"])
        label = f"TP{tp}{' (fitted)' if tp == 1 else ' (not fitted)'}"
        error_rows(f"roofline, dense, {label}", roofline._dense_times(grid), dense, grid)
        error_rows(f"quantized, dense, {label}", quantized._dense_times(grid), dense, grid)
        if tp == 1:
            t, s = tokens[inside], seconds[inside]
            error_rows("quantized, 4 GEMMs, TP1 (fitted)", gemm_sum(quantized, t), s, t)


if __name__ == "__main__":
    main()
