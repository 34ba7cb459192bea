"""What one iteration costs at least: the hardware model's latency, split into parts the bound
can add up over a whole run.

Every built-in hardware model prices a batch as (`hardware.roofline`):

    latency = C(T, R) + Σ_prefill chunks attention(c, u) + decode attention(d, Σu)

with T the batch's tokens, R its entries (requests), C what depends on the counts alone (dense
ops, LM head, all-reduces, overhead; `count_seconds`), a prefill chunk's attention the roofline
max(FLOPs / rate, bytes / bandwidth) of its c new tokens over u cached ones, and the decodes'
attention one roofline of their summed FLOPs and bytes. C(T, R) = G(T) + H(R) splits exactly
(G: C(T, 0); H: C(1, R) − C(1, 0)). The bound keeps:

- `tokens`, `entries`: the convex, non-decreasing envelopes of G and H (`envelope`) over
  1 … the KV capacity (an iteration's new tokens must fit in the KV cache);
- `attention`: the roofline's coefficients, from which `demand` bounds the attention a request
  needs over the whole run, however it is chunked and batched.
"""

from __future__ import annotations

import attrs
import numpy as np
from numpy.typing import NDArray

from slidingpolicy.bound.envelope import ConvexCost
from slidingpolicy.errors import InvalidRecordError
from slidingpolicy.hardware import HardwareModel, RooflineModel
from slidingpolicy.hardware.overlay import DenseOverlay

FloatArray = NDArray[np.float64]


@attrs.frozen(slots=True)
class Attention:
    """The roofline's attention coefficients, summed over layers: FLOPs per (query, key) pair,
    KV bytes per cached token and query + output bytes per new token, over the attention FLOP
    rate and the memory bandwidth (seconds per pair, per token)."""

    seconds_per_pair: float = 0.0
    seconds_per_cached: float = 0.0
    seconds_per_new: float = 0.0

    def prefill(self, prompt: FloatArray, one_token: FloatArray) -> FloatArray:
        """The least attention time of a prompt of p tokens prefilled in chunks of which at
        most `one_token` hold a single token (those run with the decodes, in their kernel).

        Chunks of c > 1 tokens over u cached cost max(pairs · c(u + c/2), bytes) each; over a
        whole prompt Σ c(u + c/2) = p²/2 less what one-token chunks take (≤ p − 1/2 each),
        Σ bytes ≥ (2 · cached + new) per token, and a sum of maxima is at least the maximum of
        the sums.
        """
        pairs = np.maximum(0.0, prompt * prompt / 2.0 - one_token * (prompt - 0.5))
        tokens = np.maximum(0.0, prompt - one_token)
        by_bytes = (2.0 * self.seconds_per_cached + self.seconds_per_new) * tokens
        seconds: FloatArray = np.maximum(self.seconds_per_pair * pairs, by_bytes)
        return seconds

    def decode_compute(self, context: FloatArray, decodes: FloatArray) -> FloatArray:
        """The FLOP time of `decodes` one-token entries over `context` cached tokens in all."""
        seconds: FloatArray = self.seconds_per_pair * (context + 0.5 * decodes)
        return seconds

    def decode_memory(self, context: FloatArray, decodes: FloatArray) -> FloatArray:
        """The memory time of the same: read the cache, write and read the new tokens."""
        seconds: FloatArray = self.seconds_per_cached * (context + 2.0 * decodes)
        return seconds + self.seconds_per_new * decodes


@attrs.frozen(slots=True)
class IterationCost:
    """An iteration of T tokens and R entries takes at least tokens(T) + entries(R) plus its
    attention (module docstring); `kv_capacity` tokens of KV cache (None: unlimited)."""

    name: str
    tokens: ConvexCost
    entries: ConvexCost
    attention: Attention = attrs.field(factory=Attention)
    kv_capacity: int | None = None

    @property
    def min_latency(self) -> float:
        """The least time of any iteration (at least one token and one entry)."""
        return float(self.tokens.values[0] + self.entries.values[0])

    @property
    def max_tokens(self) -> float:
        """The most tokens one iteration can take (its envelope's domain)."""
        return float(self.tokens.points[-1])


def linear_cost(b0: float, b1: float, max_tokens: int = 1 << 20) -> IterationCost:
    """Latency b0 + b1 · tokens, no attention, no KV limit (the clairvoyant oracle's model)."""
    if not (b0 >= 0.0 and b1 >= 0.0):
        raise InvalidRecordError("linear cost", "b0", "b0 and b1 must be >= 0")
    tokens = ConvexCost(np.array([1.0, max_tokens]), np.array([b0 + b1, b0 + b1 * max_tokens]))
    entries = ConvexCost(np.array([1.0, max_tokens]), np.zeros(2))
    return IterationCost(f"linear {b0:g} + {b1:g}·tokens s", tokens, entries)


def iteration_cost(hardware: HardwareModel, kv_capacity: int | None = None) -> IterationCost:
    """The cost of `hardware` (a roofline, quantized or measured model), its envelopes over
    1 … `kv_capacity` (default the hardware's) tokens and entries."""
    model: RooflineModel | DenseOverlay
    if isinstance(hardware, RooflineModel):
        model, roofline = hardware, hardware
    elif isinstance(hardware, DenseOverlay):
        model, roofline = hardware, hardware.roofline
    else:
        raise InvalidRecordError(
            f"hardware {hardware.name!r}",
            "model",
            "is not built on the roofline (RooflineModel or DenseOverlay): no bound for it",
        )
    capacity = hardware.kv_capacity_tokens if kv_capacity is None else kv_capacity
    counts = np.arange(1, capacity + 1, dtype=np.float64)
    none, one = np.zeros(capacity), np.ones(capacity)
    tokens = ConvexCost.below(model.count_seconds(counts, none))
    entries = ConvexCost.below(
        np.maximum(0.0, model.count_seconds(one, counts) - model.count_seconds(one, none))
    )
    t = roofline.terms
    attention = Attention(
        seconds_per_pair=t.layers * t.flops_token / t.attention_flops,
        seconds_per_cached=t.layers * t.kv_token / t.bandwidth,
        seconds_per_new=t.layers * t.qo_token / t.bandwidth,
    )
    return IterationCost(hardware.name, tokens, entries, attention, capacity)
