"""Joint prompt/output length distributions as quantile tables, sampled by inverse CDF.

A distribution keeps the correlation between prompt and output lengths: a table of prompt
length quantiles (every percentile, 0 to 100), and, for each of ten bins of requests by prompt
rank (deciles), a table of output length quantiles (every 2.5 %). To sample, one uniform u picks
the prompt (interpolating the prompt table at u) and its decile bin (floor(10 u)); a second
uniform picks the output from that bin's table. Interpolated values are rounded to the nearest
token. `build_distribution` makes the tables from a trace; `render_module` writes them as the
Python module `slidingpolicy.workloads.distributions`.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import attrs
import numpy as np
from numpy.typing import NDArray

from slidingpolicy._arrays import float_read_only
from slidingpolicy.errors import InvalidRecordError
from slidingpolicy.workloads.traces import load_trace

PROMPT_LEVELS = 101
OUTPUT_BINS = 10
OUTPUT_LEVELS = 41

IntArray = NDArray[np.int64]


def _table(record: str, field: str, values: tuple[int, ...], size: int) -> None:
    if len(values) != size:
        raise InvalidRecordError(record, field, f"has {len(values)} entries, needs {size}")
    if values[0] < 1 or any(b < a for a, b in itertools.pairwise(values)):
        raise InvalidRecordError(record, field, "must be non-decreasing and >= 1")


@attrs.frozen(slots=True)
class LengthDistribution:
    """Prompt quantiles and, per prompt decile, output quantiles of one data set."""

    name: str
    source: str
    rows: int
    prompt_quantiles: tuple[int, ...]
    output_quantiles: tuple[tuple[int, ...], ...]
    _prompt: NDArray[np.float64] = attrs.field(init=False, repr=False, eq=False)
    _output: NDArray[np.float64] = attrs.field(init=False, repr=False, eq=False)

    def __attrs_post_init__(self) -> None:
        record = f"length distribution {self.name!r}"
        _table(record, "prompt_quantiles", self.prompt_quantiles, PROMPT_LEVELS)
        if len(self.output_quantiles) != OUTPUT_BINS:
            raise InvalidRecordError(record, "output_quantiles", f"needs {OUTPUT_BINS} bins")
        for row in self.output_quantiles:
            _table(record, "output_quantiles", row, OUTPUT_LEVELS)
        object.__setattr__(self, "_prompt", float_read_only(self.prompt_quantiles))
        object.__setattr__(self, "_output", float_read_only(self.output_quantiles))

    def sample(self, n: int, rng: np.random.Generator) -> tuple[IntArray, IntArray]:
        """`n` (prompt, output) length pairs, drawn with two uniforms each from `rng`."""
        u = rng.random(n)
        v = rng.random(n)
        prompt = _interpolate(self._prompt[np.newaxis, :], np.zeros(n, np.int64), u)
        bins = np.minimum((u * OUTPUT_BINS).astype(np.int64), OUTPUT_BINS - 1)
        output = _interpolate(self._output, bins, v)
        return prompt, output


def _interpolate(tables: NDArray[np.float64], rows: IntArray, u: NDArray[np.float64]) -> IntArray:
    """Row `rows[i]` of `tables` read at quantile level u[i], rounded to whole tokens."""
    position = u * (tables.shape[1] - 1)
    low = np.minimum(position.astype(np.int64), tables.shape[1] - 2)
    fraction = position - low
    value = tables[rows, low] * (1.0 - fraction) + tables[rows, low + 1] * fraction
    rounded: IntArray = np.rint(value).astype(np.int64)
    return rounded


def build_distribution(
    name: str, source: str, prompts: IntArray, outputs: IntArray
) -> LengthDistribution:
    """The quantile tables of a trace's (prompt, output) pairs."""
    if prompts.size < OUTPUT_BINS * OUTPUT_LEVELS or prompts.shape != outputs.shape:
        raise InvalidRecordError(
            f"length distribution {name!r}", "rows", "needs equal, long enough columns"
        )
    prompt_q = np.rint(np.quantile(prompts, np.linspace(0.0, 1.0, PROMPT_LEVELS)))
    order = np.lexsort((outputs, prompts))
    bins = np.array_split(outputs[order], OUTPUT_BINS)
    levels = np.linspace(0.0, 1.0, OUTPUT_LEVELS)
    output_q = [np.rint(np.quantile(b, levels)).astype(np.int64) for b in bins]
    return LengthDistribution(
        name=name,
        source=source,
        rows=int(prompts.size),
        prompt_quantiles=tuple(int(x) for x in prompt_q),
        output_quantiles=tuple(tuple(int(x) for x in row) for row in output_q),
    )


def _wrapped(values: tuple[int, ...], indent: str) -> list[str]:
    """`values` as comma-separated lines of at most 100 characters."""
    lines: list[str] = []
    line = indent
    for value in values:
        piece = f"{value},"
        if len(line) + len(piece) + 1 > 100:
            lines.append(line.rstrip())
            line = indent
        line += piece + " "
    lines.append(line.rstrip())
    return lines


def render_module(distributions: tuple[LengthDistribution, ...], header: str) -> str:
    """The source of `distributions.py`: the docstring `header`, then one constant each."""
    out = [f'"""{header}\n"""', "", "from __future__ import annotations", ""]
    out += ["from slidingpolicy.workloads.lengths import LengthDistribution", "", "# fmt: off"]
    for d in distributions:
        out += [f"{d.name.upper()} = LengthDistribution(", f'    name="{d.name}",']
        out += [f'    source="{d.source}",', f"    rows={d.rows},", "    prompt_quantiles=("]
        out += _wrapped(d.prompt_quantiles, " " * 8)
        out += ["    ),", "    output_quantiles=("]
        for row in d.output_quantiles:
            out += ["        (", *_wrapped(row, " " * 12), "        ),"]
        out += ["    ),", ")"]
    out += ["# fmt: on", ""]
    return "\n".join(out)


REFERENCE_TRACES = (
    (
        "sharegpt",
        "traces/sharegpt_8k_filtered_stats_llama2_tokenizer.csv",
        "microsoft/sarathi-serve, data/processed_traces (Apache-2.0)",
    ),
    (
        "arxiv",
        "traces/arxiv_summarization_stats_llama2_tokenizer_filtered_v2.csv",
        "microsoft/vidur, data/processed_traces (MIT)",
    ),
)


def reference_distributions(data: Path) -> tuple[LengthDistribution, ...]:
    """The tables of the two reference traces under the data folder `data`."""
    built = []
    for name, relative, _ in REFERENCE_TRACES:
        trace = load_trace(data / relative)
        source = Path(relative).name
        built.append(build_distribution(name, source, trace.prompt_tokens, trace.output_tokens))
    return tuple(built)
