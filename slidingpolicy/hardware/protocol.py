"""The interface the engine and the predictor fitting use, met by every hardware model."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import numpy as np
from numpy.typing import NDArray


class HardwareModel(Protocol):
    """Iteration latency (noise-free, sampled, decode runs in closed form) and KV capacity.

    The engine prices its batches with `latency_of` (the lists it holds), its decode-only runs
    with `decode_pricer` and then `decode_latencies`, each of which must give the same floats
    as `latency` (tested per model); it draws the standard normals of the noise from its own
    seeded generator and turns each into a measured latency with `with_noise`, which `sample`
    does with the caller's generator.
    """

    @property
    def name(self) -> str: ...

    @property
    def kv_block_size(self) -> int: ...

    @property
    def kv_capacity_tokens(self) -> int: ...

    @property
    def noise_sigma(self) -> float:
        """The log-normal sigma of the noise (latency · exp(sigma · z)); for a model whose
        noise is not log-normal, the standard deviation of the log of its factor."""
        ...

    def with_noise(self, latency: float, z: float) -> float:
        """The measured latency of an iteration whose noise-free latency is `latency`, given
        one standard normal z: a deterministic function, non-decreasing in z."""
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
