"""A workload's requests as the completions a client sends: token-id prompts, an exact output
length, and each request's SLOs in `vllm_xargs` (seconds, under the keys the vLLM adapter
reads: ``ttft_slo`` and ``tbt_slo``).

Prompt tokens are drawn uniformly from the ids below `PROMPT_VOCAB` (or the model's vocabulary,
if smaller), from a seed, so that no two prompts share a prefix and a server's prefix cache
cannot shorten a prefill that the offline engine charges in full.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np

from slidingpolicy.workloads import Workload

PROMPT_VOCAB = 512
"""Prompt ids are drawn from [1, PROMPT_VOCAB): every model has at least these ids, and a
16-token block of them repeats with probability 511⁻¹⁶."""


@attrs.frozen(slots=True)
class Completion:
    """One request to send at `arrival` (seconds after the run starts): `prompt` token ids,
    exactly `max_tokens` tokens out (`ignore_eos`), and its SLOs (seconds)."""

    id: str
    arrival: float
    prompt: tuple[int, ...]
    max_tokens: int
    ttft_slo: float
    tbt_slo: float

    def body(self, model: str) -> dict[str, Any]:
        """The JSON body of its streaming `/v1/completions` request."""
        return {
            "model": model,
            "prompt": list(self.prompt),
            "max_tokens": self.max_tokens,
            "ignore_eos": True,
            "stream": True,
            "return_token_ids": True,
            "vllm_xargs": {"ttft_slo": self.ttft_slo, "tbt_slo": self.tbt_slo},
        }


def completions(
    workload: Workload, seed: int | Sequence[int], vocab: int = PROMPT_VOCAB
) -> tuple[Completion, ...]:
    """The workload's requests in order, with prompts of random ids below min(vocab,
    PROMPT_VOCAB) drawn from `seed`."""
    rng = np.random.default_rng(seed)
    high = min(vocab, PROMPT_VOCAB)
    return tuple(
        Completion(
            r.id,
            r.arrival,
            tuple(rng.integers(1, high, r.prompt_tokens).tolist()),
            r.output_tokens,
            r.ttft_slo,
            r.tbt_slo,
        )
        for r in workload.requests
    )
