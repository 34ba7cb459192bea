"""Uniform length distributions, written as the quantile tables `LengthDistribution` samples.

A uniform length on [low, high] has evenly spaced quantiles, so its table is a straight line
from `low` to `high`; sampling it (`LengthDistribution.sample`) interpolates that line and
rounds to whole tokens, so the lengths follow the uniform CDF to within that rounding.
Prompt and output lengths are independent: every prompt decile has the same output table.

The two data sets below make the ``cpu-mixed`` workload (`workloads.make`): requests sized so
that a CPU engine serving a small model (hidden 768, 6 layers, steps of tens of milliseconds)
reaches its knee at a few requests per second, for replaying against a real engine on a
machine without a GPU.

- ``chat``: prompts of 32–256 tokens, outputs of 16–96 tokens.
- ``documents``: prompts of 512–1024 tokens, outputs of 16–96 tokens.
"""

from __future__ import annotations

import numpy as np

from slidingpolicy.workloads.lengths import (
    OUTPUT_BINS,
    OUTPUT_LEVELS,
    PROMPT_LEVELS,
    LengthDistribution,
)


def _line(low: int, high: int, levels: int) -> tuple[int, ...]:
    """`levels` evenly spaced whole quantiles from `low` to `high`."""
    return tuple(int(x) for x in np.rint(np.linspace(low, high, levels)))


def uniform(name: str, prompt: tuple[int, int], output: tuple[int, int]) -> LengthDistribution:
    """Prompt lengths uniform on `prompt` and, independently, outputs uniform on `output`."""
    outputs = _line(*output, OUTPUT_LEVELS)
    return LengthDistribution(
        name=name,
        source=f"uniform: prompt {prompt[0]}-{prompt[1]}, output {output[0]}-{output[1]}",
        rows=0,
        prompt_quantiles=_line(*prompt, PROMPT_LEVELS),
        output_quantiles=(outputs,) * OUTPUT_BINS,
    )


CHAT = uniform("chat", (32, 256), (16, 96))
DOCUMENTS = uniform("documents", (512, 1024), (16, 96))
