"""The seven batch features and the scenario of a batch (eq. 4–5)."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

DECODE, PREFILL, MIXED = 0, 1, 2
SCENARIOS = ("decode", "prefill", "mixed")
NUM_FEATURES = 7

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


def scenario_of(num_decode: int, num_prefill: int) -> int:
    """Pure decode when P is empty, pure prefill when D is empty, mixed otherwise (eq. 5)."""
    if num_prefill == 0:
        return DECODE
    return PREFILL if num_decode == 0 else MIXED


def batch_features(chunks: IntArray, contexts: IntArray) -> tuple[FloatArray, int]:
    """x1..x7 of a batch of (c_i, u_i) with D = {c ≤ 1}, P = {c > 1} (eq. 4), and its scenario.

    x1 = Σ_P c(u+c), x2 = Σ_P c², x3 = Σ u, x4 = |D|, x5 = Σ_D u, x6 = Σ_P c, x7 = max_P c.
    """
    c = np.asarray(chunks, dtype=np.float64)
    u = np.asarray(contexts, dtype=np.float64)
    prefill = c > 1
    cp, up = c[prefill], u[prefill]
    decode_u = u[~prefill]
    x = np.array(
        [
            float(cp @ (up + cp)),
            float(cp @ cp),
            float(u.sum()),
            float(decode_u.size),
            float(decode_u.sum()),
            float(cp.sum()),
            float(cp.max()) if cp.size else 0.0,
        ]
    )
    return x, scenario_of(decode_u.size, cp.size)
