"""The engine's noise: a seeded generator of its own, and its standard normals in order.

An iteration's measured latency is the hardware's `with_noise` of its noise-free latency and
one standard normal z of the run's generator (latency · exp(sigma · z) on the log-normal
models, as in `hardware.roofline.noisy`; a measured ratio at quantile Φ(z) on a traced one),
z drawn in the order the iterations run, whether stepped or advanced in closed form.
"""

from __future__ import annotations

import numpy as np


def engine_rng(seed: int, replica: int = 0) -> np.random.Generator:
    """The run's noise generator: its own stream, apart from the workload's; a cluster's
    replica k > 0 has a stream of its own (replica 0's is the single run's)."""
    key = (0xE,) if replica == 0 else (0xE, replica)
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=key))


class Normals:
    """The standard normals of a generator, drawn in blocks and handed out in order.

    numpy draws an array of normals one by one from the same stream as single draws, so the
    sequence handed out is exactly that of calling `rng.standard_normal()` each time (tested);
    the hardware turns each into its noise (`HardwareModel.with_noise`).
    """

    def __init__(self, rng: np.random.Generator, block: int = 1024) -> None:
        self.rng = rng
        self.block = block
        self.buffer: list[float] = []
        self.position = 0

    def take(self) -> float:
        """The next normal."""
        if self.position == len(self.buffer):
            self.buffer = self.rng.standard_normal(self.block).tolist()
            self.position = 0
        z = self.buffer[self.position]
        self.position += 1
        return z

    def peek(self, k: int) -> list[float]:
        """The next `k` normals, without taking them."""
        if self.position + k > len(self.buffer):
            fresh: list[float] = self.rng.standard_normal(max(self.block, k)).tolist()
            self.buffer = self.buffer[self.position :] + fresh
            self.position = 0
        return self.buffer[self.position : self.position + k]

    def skip(self, k: int) -> None:
        """Take `k` normals that `peek` returned."""
        self.position += k
