"""The interface the engine and the predictor fitting use, met by every hardware model."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import numpy as np
from numpy.typing import NDArray


class HardwareModel(Protocol):
    """Iteration latency (noise-free, sampled, decode runs in closed form) and KV capacity.

    The engine prices its batches with `latency_of` (the lists it holds), its decode-only runs
    with `decode_pricer` and then `decode_latencies`, and draws the noise of `sample` itself,
    with `noise_sigma`: each must give the same floats as `latency` (tested per model).
    """

    @property
    def name(self) -> str: ...

    @property
    def kv_block_size(self) -> int: ...

    @property
    def kv_capacity_tokens(self) -> int: ...

    @property
    def noise_sigma(self) -> float:
        """The log-normal sigma of `sample`'s noise: latency · exp(sigma · z)."""
        ...

    def latency(self, chunks: NDArray[np.int64], contexts: NDArray[np.int64]) -> float: ...

    def latency_of(self, chunks: list[int], contexts: list[int]) -> float:
        """`latency` of a batch given as lists of ints."""
        ...

    def sample(
        self, chunks: NDArray[np.int64], contexts: NDArray[np.int64], rng: np.random.Generator
    ) -> float: ...

    def decode_latencies(
        self, num_decodes: int, total_context: NDArray[np.int64]
    ) -> NDArray[np.float64]: ...

    def decode_pricer(self, num_decodes: int) -> Callable[[int], float]:
        """`decode_latencies` of one iteration of `num_decodes` (>= 1) decodes, as a function of
        its total context."""
        ...
