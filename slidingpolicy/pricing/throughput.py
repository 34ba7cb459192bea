"""ρ_t, the recent prefill throughput (tokens/s) that eq. 12 turns into a TTFT budget: an
exponential average of each measured step's prefill tokens per second."""

from __future__ import annotations

THROUGHPUT_MEMORY = 0.9
"""The weight ρ_t keeps at each measured prefill step."""


def next_throughput(
    throughput: float, prefill_tokens: int, latency: float, memory: float = THROUGHPUT_MEMORY
) -> float:
    """ρ_t after a step that prefilled `prefill_tokens` in `latency` seconds; unchanged by a
    step with no prefill or no measured time."""
    if prefill_tokens <= 0 or latency <= 0:
        return throughput
    return memory * throughput + (1.0 - memory) * (prefill_tokens / latency)
