"""A real engine's hardware model, built from its measured steps (a step trace).

The engine's latency as a function of the batch is the monotone least-squares fit of the
trace's (batch, latency) samples on the predictor's features (eq. 4–6, `pricing.fit`), the
same fit `slidingpolicy fit --trace` writes; its noise is the empirical distribution of the
trace's measured / fitted ratios. One iteration's latency is the fit times the ratio at the
quantile Φ(z) of the engine's next standard normal z (interpolated between order
statistics), so the engine's seeded noise draws it: the same seed, the same latencies.
The model is monotone as the fit is (proofs/monotonicity.md): a token more in a prefill
chunk, or one more chunk, never makes an iteration faster.

A trace does not say how large the engine's KV cache is: the model's is `UNLIMITED_KV`, and
`EngineOptions.kv_capacity_tokens` (`--kv-tokens`) sets the engine's real one.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from pathlib import Path

import attrs
import numpy as np

from slidingpolicy._arrays import read_only
from slidingpolicy.errors import InvalidRecordError
from slidingpolicy.hardware.roofline import (
    KV_BLOCK_SIZE,
    FloatArray,
    IntArray,
    check_batch,
    check_decode_run,
)
from slidingpolicy.pricing.features import EMPTY, add_chunks, decode_terms
from slidingpolicy.pricing.fit import Sample, fit_predictor
from slidingpolicy.pricing.model import LatencyPredictor
from slidingpolicy.step_trace import read_samples

UNLIMITED_KV = 2**40
"""KV slots of a model whose engine's cache size is not known: never the binding limit."""


def _ratios(value: object) -> FloatArray:
    return read_only(np.sort(np.asarray(value, dtype=np.float64)))


def normal_cdf(z: float) -> float:
    """Φ(z), the standard normal distribution function."""
    return 0.5 * math.erfc(-z / math.sqrt(2.0))


@attrs.frozen(slots=True)
class TracedModel:
    """Latency = `fit`'s T̂ of the batch times a ratio drawn from `ratios` (module docstring).

    `ratios` are the measured / fitted latencies of the trace's steps, sorted; `fit` prices a
    batch on Python floats in one order (`LatencyPredictor.price`), so every path of the
    `HardwareModel` protocol gives the same floats."""

    name: str
    fit: LatencyPredictor
    ratios: FloatArray = attrs.field(converter=_ratios, eq=False)
    kv_capacity_tokens: int = UNLIMITED_KV
    kv_block_size: int = KV_BLOCK_SIZE

    def __attrs_post_init__(self) -> None:
        record = f"hardware {self.name!r}"
        r = self.ratios
        if r.ndim != 1 or r.size == 0 or not np.all(np.isfinite(r)) or r[0] <= 0.0:
            raise InvalidRecordError(
                record, "ratios", "must be a non-empty list of finite ratios > 0"
            )

    @property
    def noise_sigma(self) -> float:
        """The standard deviation of the log of the noise factor (the ratios)."""
        return float(np.std(np.log(self.ratios)))

    def ratio(self, z: float) -> float:
        """The ratio at quantile Φ(z) of `ratios`, linear between order statistics: a
        non-decreasing function of z."""
        r = self.ratios
        position = normal_cdf(z) * (r.size - 1)
        low = min(int(position), r.size - 1)
        high = min(low + 1, r.size - 1)
        weight = position - low
        return float(r[low] + weight * (r[high] - r[low]))

    def latency(self, chunks: IntArray, contexts: IntArray) -> float:
        """The fit's seconds for one iteration (noise-free); an empty batch takes 0.0."""
        check_batch(chunks, contexts)
        return self.latency_of(chunks.tolist(), contexts.tolist())

    def latency_of(self, chunks: list[int], contexts: list[int]) -> float:
        """`latency` of a batch given as lists of ints."""
        return self.fit.price(add_chunks(EMPTY, zip(chunks, contexts, strict=True)))

    def with_noise(self, latency: float, z: float) -> float:
        """`latency` times the ratio at quantile Φ(z) (`ratio`)."""
        return latency * self.ratio(z)

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


def measured_ratios(fit: LatencyPredictor, samples: Sequence[Sample]) -> list[float]:
    """y / T̂ of every sample the fit prices above zero."""
    ratios = []
    for sample in samples:
        x, scenario = sample.features(fit.tile)
        predicted = fit.predict_features(x, scenario)
        if predicted > 0.0:
            ratios.append(sample.latency / predicted)
    return ratios


def from_samples(samples: Sequence[Sample], name: str) -> TracedModel:
    """The model of an engine whose measured steps are `samples` (module docstring)."""
    fit = fit_predictor(samples, source=name)
    ratios = [r for r in measured_ratios(fit, samples) if r > 0.0]
    if not ratios:
        raise InvalidRecordError(
            f"hardware {name!r}", "ratios", "no step with a measured latency above zero"
        )
    return TracedModel(name, fit, ratios)


def traced_model(paths: Sequence[Path | str]) -> TracedModel:
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
