"""A grid run on the real engine with the tiny model, and its report: every step runs its
plan, every cell is measured after its warm-up, the comparison and tile probes are there,
a run past its budget keeps what ran, and the KV size per token is the model's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import transformers
from slidingpolicy.embedding import version_series
from slidingpolicy.replay.shapes import write_shape
from slidingpolicy.step_trace import parse_step
from transformers import AutoConfig

from slidingpolicy_transformers.__main__ import main
from slidingpolicy_transformers.grid import Grid
from slidingpolicy_transformers.grid_report import cell_key, report
from slidingpolicy_transformers.grid_run import TRACE, RunSettings, kv_bytes, run_grid

GRID = Grid([0, 8, 16], [0, 2], [16, 32], steps=3, warmup=1)


@pytest.fixture(scope="module")
def grid_run(model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("grid")
    run_grid(GRID, RunSettings(model_dir, budget=120.0, stall=30.0), out)
    return out


def test_every_cell_runs_its_plan_and_is_measured(grid_run: Path) -> None:
    described = json.loads((grid_run / "grid.json").read_text())
    assert (described["ended"], described["cells_done"]) == ("done", len(GRID.cells()))
    # as the engine ran it: 5.17 switches sdpa to paged|sdpa until stop(), 5.23 pages in sdpa
    paged = version_series(transformers.__version__) == (5, 17)
    assert described["attention"] == ("paged|sdpa" if paged else "sdpa")
    keys = []
    for line in (grid_run / TRACE).read_text().splitlines():
        step = parse_step(line)
        assert step.plan is not None
        assert step.scheduled == step.plan.allocations
        assert step.latency is not None
        keys.append(cell_key(step, "chunk-"))
    setup = keys.index((8, 0, 0))
    assert keys[:setup] == [None] * setup  # the decoders' prefills come first
    assert len(keys) == setup + GRID.steps * len(GRID.cells())
    result = report(grid_run, ["h100", "h100-quantized"])
    assert [(r["chunk"], r["decodes"], r["context"], r["steps"]) for r in result["rows"]] == [
        (c.chunk, c.decodes, c.context, GRID.steps - GRID.warmup)
        for c in sorted(GRID.cells(), key=lambda c: (c.context, c.decodes, c.chunk))
    ]
    assert {(e["hardware"], e["steps"]) for e in result["errors"]} >= {
        ("h100", "all"),
        ("h100-quantized", "mixed"),
    }
    assert {(p["chunks"], p["decodes"]) for p in result["tile_probes"]} == {
        ("16/8", 0),
        ("16/8", 2),
    }
    assert (grid_run / "grid.csv").read_text().count("\n") == len(GRID.cells()) + 1


def test_a_run_past_its_budget_keeps_what_ran(model_dir: Path, tmp_path: Path) -> None:
    described = run_grid(GRID, RunSettings(model_dir, budget=0.0), tmp_path)
    assert described["ended"] == "budget"
    assert described["cells_done"] < described["cells"]
    assert report(tmp_path, ["h100"])["cells_measured"] < len(GRID.cells())


def test_the_kv_cache_of_qwen2_5_7b_is_57344_bytes_a_token_in_bf16(tmp_path: Path) -> None:
    config = AutoConfig.from_pretrained(write_shape("qwen2.5-7b", tmp_path))
    assert kv_bytes(config, "bfloat16", 1) == 28 * 2 * 4 * 128 * 2 == 57344


def test_a_bad_grid_is_one_line(model_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["grid", str(model_dir), "--out", str(tmp_path), "--chunks", "8",
              "--batches", "2", "--contexts", "16", "--steps", "1", "--warmup", "1"])  # fmt: skip
    assert str(stopped.value).startswith("slidingpolicy-transformers grid: steps:")
    assert "\n" not in str(stopped.value)
