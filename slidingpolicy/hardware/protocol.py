"""The interface the engine and the predictor fitting use, met by every hardware model."""

from __future__ import annotations

from typing import Protocol

import numpy as np
from numpy.typing import NDArray


class HardwareModel(Protocol):
    """Iteration latency (noise-free, sampled, decode runs in closed form) and KV capacity."""

    @property
    def name(self) -> str: ...

    @property
    def kv_block_size(self) -> int: ...

    @property
    def kv_capacity_tokens(self) -> int: ...

    def latency(self, chunks: NDArray[np.int64], contexts: NDArray[np.int64]) -> float: ...

    def sample(
        self, chunks: NDArray[np.int64], contexts: NDArray[np.int64], rng: np.random.Generator
    ) -> float: ...

    def decode_latencies(
        self, num_decodes: int, total_context: NDArray[np.int64]
    ) -> NDArray[np.float64]: ...
