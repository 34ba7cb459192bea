"""Hardware models that replace the roofline's dense time and take the rest from it.

The dense time is what depends on an iteration's token count alone: the per-layer linear
(GEMM) and element-wise ops and the embedding. The measured-profile model reads it from a
profile, the quantized roofline computes it with tile and wave quantization; attention, the
LM head, the tensor-parallel all-reduces, the overhead, the noise and the KV capacity come from
the roofline, through the same scalar and array paths (bit for bit, tested).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from slidingpolicy.hardware.batch_summary import (
    FloatArray,
    IntArray,
    check_batch,
    check_decode_run,
    count_batch,
    decode_run,
)
from slidingpolicy.hardware.roofline import RooflineModel, lognormal, noisy
from slidingpolicy.hardware.scalar_roofline import (
    scalar_decode_pricer,
    scalar_latency,
    scalar_latency_of,
)


class DenseOverlay:
    """The `HardwareModel` methods of a model given `roofline`, `_dense_time` (one token count,
    Python floats) and `_dense_times` (numpy, the same values)."""

    __slots__ = ()
    roofline: RooflineModel
    _dense_time: Callable[[float], float]
    _dense_times: Callable[[FloatArray], FloatArray]

    @property
    def kv_block_size(self) -> int:
        """Tokens per KV block."""
        return self.roofline.kv_block_size

    @property
    def kv_capacity_tokens(self) -> int:
        """KV slots, from the roofline's memory model."""
        return self.roofline.kv_capacity_tokens

    @property
    def noise_sigma(self) -> float:
        """The roofline's log-normal noise sigma."""
        return self.roofline.noise_sigma

    def latency(self, chunks: IntArray, contexts: IntArray) -> float:
        """Noise-free seconds of one iteration; an empty batch takes 0.0.

        On Python floats (`scalar_latency`): bit for bit `latency_arrays`, faster on the small
        batches an engine runs."""
        return scalar_latency(self.roofline, chunks, contexts, self._dense_time)

    def latency_arrays(self, chunks: IntArray, contexts: IntArray) -> float:
        """`latency` on numpy arrays: the reference the scalar path is tested against."""
        check_batch(chunks, contexts)
        if chunks.size == 0:
            return 0.0
        batch = self.roofline.summarize(chunks, contexts)
        return float(self.roofline.iteration_times(self._dense_times, batch)[0])

    def latency_of(self, chunks: list[int], contexts: list[int]) -> float:
        """`latency` of a batch given as lists of ints (what an engine holds)."""
        return scalar_latency_of(self.roofline, chunks, contexts, self._dense_time)

    def sample(self, chunks: IntArray, contexts: IntArray, rng: np.random.Generator) -> float:
        """`latency` times the roofline's log-normal noise, drawn from `rng`."""
        return noisy(self.latency(chunks, contexts), self.noise_sigma, rng)

    def count_seconds(self, tokens: FloatArray, entries: FloatArray) -> FloatArray:
        """`RooflineModel.count_seconds` with this model's dense time."""
        return self.roofline.iteration_times(self._dense_times, count_batch(tokens, entries))

    def with_noise(self, latency: float, z: float) -> float:
        """`latency` times the roofline's log-normal noise of the standard normal z."""
        return lognormal(latency, self.noise_sigma, z)

    def decode_latencies(self, num_decodes: int, total_context: IntArray) -> FloatArray:
        """Noise-free latency of each decode-only iteration, given its total cached context."""
        check_decode_run(num_decodes, total_context)
        if num_decodes == 0:
            return np.zeros(total_context.size)
        batch = decode_run(num_decodes, total_context)
        return self.roofline.iteration_times(self._dense_times, batch)

    def decode_pricer(self, num_decodes: int) -> Callable[[int], float]:
        """`decode_latencies` of one iteration of `num_decodes` (>= 1) decodes, as a function of
        its total context, on Python floats: bit for bit the array's entry (tested)."""
        return scalar_decode_pricer(self.roofline, num_decodes, self._dense_time)
