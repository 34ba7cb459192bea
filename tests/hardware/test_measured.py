"""The packaged measured hardware: built by name with no data files, equal to its CSV."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from slidingpolicy.errors import InvalidRecordError, UnknownNameError
from slidingpolicy.hardware import ProfiledModel, build_hardware, hardware_names
from slidingpolicy.hardware.build import MEASURED
from slidingpolicy.hardware.measured import (
    MeasuredGrid,
    MeasuredTable,
    build_table,
    read_tables,
    render_json,
)

A100_80G_MEASURED = MEASURED["a100-80g-measured"]


@pytest.mark.parametrize("tp", [1, 2, 4, 8])
def test_the_a100_table_builds_by_name_for_each_tp(tp: int) -> None:
    hw = build_hardware("a100-80g-measured", "llama3-8b", tp)
    assert isinstance(hw, ProfiledModel)
    assert hw.kv_capacity_tokens > 0
    assert hw.latency(np.array([512]), np.array([0])) > 0
    assert "a100-80g-measured" in hardware_names()


def test_the_table_keeps_the_measured_step_at_the_tile_edge() -> None:
    hw = build_hardware("a100-80g-measured", "llama3-8b", 1)
    assert isinstance(hw, ProfiledModel)
    dense = hw._dense_times(np.array([128.0, 129.0, 136.0]))
    assert dense[1] == dense[2] > 1.3 * dense[0]


def test_another_model_is_refused_with_the_one_measured() -> None:
    with pytest.raises(InvalidRecordError, match="measures 'llama3-8b' only"):
        build_hardware("a100-80g-measured", "qwen2.5-7b", 1)


def test_a_tp_the_table_lacks_lists_the_ones_it_has() -> None:
    with pytest.raises(UnknownNameError, match="known: 1, 2, 4, 8"):
        build_hardware("a100-80g-measured", "llama3-8b", 3)


def test_the_packaged_table_equals_the_csv(vidur_profile: Path) -> None:
    fresh = build_table(
        A100_80G_MEASURED.name,
        A100_80G_MEASURED.gpu,
        A100_80G_MEASURED.model,
        vidur_profile,
        A100_80G_MEASURED.source,
    )
    assert fresh == A100_80G_MEASURED
    for grid in A100_80G_MEASURED.grids:
        packaged = A100_80G_MEASURED.build("llama3-8b", grid.tp, 0.02)
        read = build_hardware("a100-80g", "llama3-8b", grid.tp, vidur_profile)
        assert isinstance(read, ProfiledModel)
        assert np.array_equal(packaged.num_tokens, read.num_tokens)
        np.testing.assert_allclose(packaged.dense_seconds, read.dense_seconds, atol=1e-8, rtol=0)


def test_render_json_round_trips(tmp_path: Path) -> None:
    table = MeasuredTable(
        "x-measured", "a100-80g", "llama3-8b", "a test", (MeasuredGrid(1, (1, 8), (0.5, 0.75)),)
    )
    path = tmp_path / "tables.json"
    path.write_text(render_json((table, A100_80G_MEASURED), "a header\non two lines"))
    assert read_tables(path) == (table, A100_80G_MEASURED)
    assert read_tables() == (A100_80G_MEASURED,)


@pytest.mark.parametrize(
    ("tokens", "ms"),
    [((1,), (0.5,)), ((8, 1), (0.5, 0.7)), ((0, 8), (0.5, 0.7)), ((1, 8), (0.5,))],
)
def test_a_bad_grid_is_refused(tokens: tuple[int, ...], ms: tuple[float, ...]) -> None:
    with pytest.raises(InvalidRecordError, match="tokens"):
        MeasuredGrid(1, tokens, ms)
