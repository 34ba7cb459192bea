"""The embedded length tables: sampling matches them, and they match the reference traces."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from slidingpolicy.workloads.distributions import ARXIV, SHAREGPT
from slidingpolicy.workloads.lengths import (
    OUTPUT_BINS,
    PACKAGED,
    LengthDistribution,
    build_distribution,
    read_distributions,
    reference_distributions,
    render_json,
)

EMBEDDED = (SHAREGPT, ARXIV)


@pytest.mark.parametrize("table", EMBEDDED, ids=lambda d: d.name)
def test_sampled_prompt_quantiles_match_the_table(table: LengthDistribution) -> None:
    prompt, _ = table.sample(200_000, np.random.default_rng(0))
    levels = np.linspace(0.0, 1.0, len(table.prompt_quantiles))[1:-1]
    sampled = np.quantile(prompt, levels)
    expected = np.array(table.prompt_quantiles[1:-1], dtype=float)
    assert np.all(np.abs(sampled - expected) <= 0.02 * expected + 2)


@pytest.mark.parametrize("table", EMBEDDED, ids=lambda d: d.name)
def test_sampled_outputs_of_the_longest_prompts_match_the_top_bin(
    table: LengthDistribution,
) -> None:
    prompt, output = table.sample(400_000, np.random.default_rng(1))
    top = output[prompt > table.prompt_quantiles[92]]
    row = np.array(table.output_quantiles[OUTPUT_BINS - 1], dtype=float)
    sampled = np.quantile(top, np.linspace(0.0, 1.0, row.size)[2:-2])
    assert np.all(np.abs(sampled - row[2:-2]) <= 0.04 * row[2:-2] + 3)


def test_arxiv_keeps_its_negative_prompt_output_correlation() -> None:
    prompt, output = ARXIV.sample(50_000, np.random.default_rng(2))
    assert np.corrcoef(np.log(prompt), np.log(output))[0, 1] < -0.3


@given(st.integers(0, 2**32), st.integers(1, 500))
def test_same_seed_same_lengths_within_the_table_range(seed: int, n: int) -> None:
    first = SHAREGPT.sample(n, np.random.default_rng(seed))
    second = SHAREGPT.sample(n, np.random.default_rng(seed))
    assert np.array_equal(first[0], second[0])
    assert np.array_equal(first[1], second[1])
    assert first[0].min() >= SHAREGPT.prompt_quantiles[0]
    assert first[0].max() <= SHAREGPT.prompt_quantiles[-1]
    assert first[1].min() >= 1


def test_tables_are_the_exact_quantiles_of_the_data() -> None:
    prompts = np.arange(1, 1001, dtype=np.int64)
    outputs = 2 * prompts
    table = build_distribution("toy", "toy.csv", prompts, outputs)
    assert table.prompt_quantiles[50] == 500
    assert table.output_quantiles[0][0] == 2
    assert table.output_quantiles[OUTPUT_BINS - 1][-1] == 2000


def test_the_rendered_tables_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "tables.json"
    path.write_text(render_json(EMBEDDED, "header"))
    assert read_distributions(path) == {"sharegpt": SHAREGPT, "arxiv": ARXIV}


def test_the_packaged_file_is_what_render_json_writes_of_its_tables() -> None:
    about = "\n".join(json.loads(PACKAGED.read_text())["about"])
    assert "scripts/make_distributions.py" in about
    assert PACKAGED.read_text() == render_json(EMBEDDED, about)


def test_the_committed_tables_equal_a_regeneration_from_the_traces(traces: Path) -> None:
    assert reference_distributions(traces.parent) == EMBEDDED
