"""A real engine's hardware model, built from its measured steps (a step trace).

The engine's latency as a function of the batch is the monotone least-squares fit of the
trace's (batch, latency) samples on the predictor's features (eq. 4–6, `pricing.fit`), the
same fit `slidingpolicy fit --trace` writes; its noise is the empirical distribution of the
trace's measured / fitted ratios, by class of fitted latency (`ratio_noise`). One iteration's
latency is the fit times the ratio of its class at the quantile Φ(z) of the engine's next
standard normal z, so the engine's seeded noise draws it: the same seed, the same latencies.
The model is monotone as the fit is (proofs/monotonicity.md): a token more in a prefill
chunk, or one more chunk, never makes an iteration faster.

A trace does not say how large the engine's KV cache is: the model's is `UNLIMITED_KV`, and
`EngineOptions.kv_capacity_tokens` (`--kv-tokens`) sets the engine's real one.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from pathlib import Path

import attrs
import numpy as np

from slidingpolicy._paths import StrPath
from slidingpolicy.hardware.batch_summary import FloatArray, IntArray, check_batch, check_decode_run
from slidingpolicy.hardware.ratio_noise import RatioNoise
from slidingpolicy.hardware.roofline import KV_BLOCK_SIZE
from slidingpolicy.pricing.features import EMPTY, add_chunks, decode_terms
from slidingpolicy.pricing.fit import fit_predictor
from slidingpolicy.pricing.model import LatencyPredictor
from slidingpolicy.pricing.samples import Sample
from slidingpolicy.step_trace import read_samples

UNLIMITED_KV = 2**40
"""KV slots of a model whose engine's cache size is not known: never the binding limit."""


@attrs.frozen(slots=True)
class TracedModel:
    """Latency = `fit`'s T̂ of the batch times a ratio drawn from `noise` (module docstring).

    `fit` prices a batch on Python floats in one order (`LatencyPredictor.price`), so every
    path of the `HardwareModel` protocol gives the same floats."""

    name: str
    fit: LatencyPredictor
    noise: RatioNoise
    kv_capacity_tokens: int = UNLIMITED_KV
    kv_block_size: int = KV_BLOCK_SIZE

    @property
    def noise_sigma(self) -> float:
        """The standard deviation of the log of the noise factor (all the ratios)."""
        return float(np.std(np.log(self.noise.ratios)))

    def latency(self, chunks: IntArray, contexts: IntArray) -> float:
        """The fit's seconds for one iteration (noise-free); an empty batch takes 0.0."""
        check_batch(chunks, contexts)
        return self.latency_of(chunks.tolist(), contexts.tolist())

    def latency_of(self, chunks: list[int], contexts: list[int]) -> float:
        """`latency` of a batch given as lists of ints."""
        return self.fit.price(add_chunks(EMPTY, zip(chunks, contexts, strict=True)))

    def with_noise(self, latency: float, z: float) -> float:
        """`latency` times the ratio of its class at quantile Φ(z) (`RatioNoise.factor`)."""
        return latency * self.noise.factor(latency, z)

    def sample(self, chunks: IntArray, contexts: IntArray, rng: np.random.Generator) -> float:
        """`latency` with the noise of one standard normal drawn from `rng`."""
        return self.with_noise(self.latency(chunks, contexts), float(rng.standard_normal()))

    def decode_pricer(self, num_decodes: int) -> Callable[[int], float]:
        """The latency of `num_decodes` decodes as a function of their total context."""
        price = self.fit.price
        return lambda context: price(decode_terms(num_decodes, context))

    def decode_latencies(self, num_decodes: int, total_context: IntArray) -> FloatArray:
        """Noise-free latency of each decode-only iteration, given its total cached context."""
        check_decode_run(num_decodes, total_context)
        if num_decodes == 0:
            return np.zeros(total_context.size)
        price = self.decode_pricer(num_decodes)
        return np.array([price(int(u)) for u in total_context.tolist()], dtype=np.float64)


def from_samples(samples: Sequence[Sample], name: str) -> TracedModel:
    """The model of an engine whose measured steps are `samples` (module docstring)."""
    fit = fit_predictor(samples, source=name)
    fitted = []
    for sample in samples:
        x, scenario = sample.features(fit.tile)
        fitted.append(fit.predict_features(x, scenario))
    noise = RatioNoise.measured(fitted, [s.latency for s in samples])
    return TracedModel(name, fit, noise)


def traced_model(paths: Sequence[StrPath]) -> TracedModel:
    """The model of the step traces at `paths` (read and fitted once per process for the same
    files, unchanged: a capacity search rebuilds its hardware for every trial)."""
    stamps = []
    for path in paths:
        try:
            stat = Path(path).stat()
            stamps.append((str(path), stat.st_mtime_ns, stat.st_size))
        except OSError:
            stamps.append((str(path), 0, 0))
    return _traced(tuple(stamps))


@functools.lru_cache(maxsize=8)
def _traced(stamps: tuple[tuple[str, int, int], ...]) -> TracedModel:
    paths = [path for path, _, _ in stamps]
    found = read_samples(paths)
    return from_samples(found.samples, "trace:" + ",".join(Path(p).name for p in paths))
