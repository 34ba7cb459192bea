"""The work a request needs before a given token: what no schedule can avoid doing for it.

A request with prompt p whose first k output tokens are due (k ≥ 1) needs, by the deadline of
token k (eq. 1):

- tokens: its whole prompt and k − 1 decode tokens, p + k − 1;
- entries: k − 1 decodes and at least one prefill chunk, k;
- prefill attention: `Attention.prefill`, where at most ⌊L_ttft / ℓ_min⌋ chunks hold one
  token (each takes an iteration of at least ℓ_min, all before the first token's deadline);
- decode attention over contexts p + 1, …, p + k − 1 (the decode that produces token g + 1
  reads the prompt and the g tokens before it): their FLOP time and memory time;
- context: Σ u over those decodes, the KV tokens its decodes hold (Little's law).

Every column is non-decreasing in p and in k, which the bound's drops use.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from slidingpolicy.bound.cost import IterationCost

FloatArray = NDArray[np.float64]

COLUMNS = ("tokens", "entries", "prefill", "decode_compute", "decode_memory", "context")
"""The work columns, in the order `demand` stacks them."""


def demand(
    cost: IterationCost, prompt: FloatArray, due: FloatArray, ttft: FloatArray
) -> FloatArray:
    """The work (module docstring) of requests with these prompts, `due` tokens due (0: none
    yet, no work) and TTFT SLOs, stacked along a new last axis in `COLUMNS` order."""
    prompt, due, ttft = np.broadcast_arrays(prompt, due, ttft)
    decodes = np.maximum(due - 1.0, 0.0)
    context = decodes * prompt + due * decodes / 2.0
    one_token = np.minimum(np.floor(ttft / cost.min_latency), prompt)
    attention = cost.attention
    stacked: FloatArray = np.empty((*prompt.shape, len(COLUMNS)))
    stacked[..., 0] = prompt + decodes
    stacked[..., 1] = due
    stacked[..., 2] = attention.prefill(prompt, one_token)
    stacked[..., 3] = attention.decode_compute(context, decodes)
    stacked[..., 4] = attention.decode_memory(context, decodes)
    stacked[..., 5] = context
    stacked[due < 1.0] = 0.0
    return stacked
