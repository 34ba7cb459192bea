"""The profiled model reads Vidur's measured timings and agrees with the roofline's physics."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slidingpolicy.errors import InvalidRecordError, TraceFormatError, UnknownNameError
from slidingpolicy.hardware import ProfiledModel, RooflineModel, build_hardware, gpu, model
from slidingpolicy.hardware.profiled import PER_LAYER_OPS

A100 = RooflineModel(gpu("a100-80g"), model("llama3-8b"), 1)
HEADER = ["num_tokens", "num_tensor_parallel_workers"]
HEADER += [f"time_stats.{op}.median" for op in PER_LAYER_OPS]


def write_profile(path: Path, rows: list[list[str]], header: list[str] = HEADER) -> Path:
    path.write_text("\n".join(",".join(row) for row in [header, *rows]) + "\n")
    return path


def tiny(tmp_path: Path) -> ProfiledModel:
    """A profile where every per-layer op takes tokens/1000 ms at 1 and 100 tokens."""
    rows = [[str(t), "1"] + [str(t / 1000)] * len(PER_LAYER_OPS) for t in (1, 100)]
    return ProfiledModel.from_csv(write_profile(tmp_path / "tiny.csv", rows), A100)


def test_the_vidur_profile_loads_for_each_of_its_tp_degrees(vidur_profile: Path) -> None:
    for tp in (1, 2, 4, 8):
        hw = build_hardware("a100-80g", "llama3-8b", tp, profile=vidur_profile)
        assert hw.kv_capacity_tokens > 0
        assert "profiled" in hw.name


def test_measured_prefill_agrees_with_the_roofline_within_ten_percent(
    vidur_profile: Path,
) -> None:
    profiled = ProfiledModel.from_csv(vidur_profile, A100)
    one = np.array([2048]), np.array([0])
    assert profiled.latency(*one) == pytest.approx(A100.latency(*one), rel=0.10)


def test_measured_steps_and_dips_are_kept(vidur_profile: Path) -> None:
    profiled = ProfiledModel.from_csv(vidur_profile, A100)
    at = dict(zip(profiled.num_tokens.tolist(), profiled.dense_seconds.tolist(), strict=True))
    assert at[136] > 1.3 * at[128]  # the 128-row tile edge (Vidur: +37 %)
    assert at[192] < at[152]  # a measured sweet spot (cuBLAS picks another kernel)
    assert not profiled.dense_seconds.flags.writeable


def test_a_tile_edge_steps_one_token_past_the_measured_point(vidur_profile: Path) -> None:
    profiled = ProfiledModel.from_csv(vidur_profile, A100)
    seconds = profiled._dense_times(np.array([128.0, 129.0, 132.0, 136.0]))
    assert seconds[0] < seconds[1] == seconds[2] == seconds[3]


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(1, 64), st.lists(st.integers(0, 8192), min_size=1, max_size=6))
def test_decode_latencies_equal_per_iteration_latency_to_the_last_bit(
    vidur_profile: Path, n: int, totals: list[int]
) -> None:
    profiled = ProfiledModel.from_csv(vidur_profile, A100)
    run = profiled.decode_latencies(n, np.array(totals, dtype=np.int64))
    for total, latency in zip(totals, run, strict=True):
        contexts = np.full(n, total // n, np.int64)
        contexts[: total % n] += 1
        assert profiled.latency(np.ones(n, np.int64), contexts) == latency


def test_time_between_grid_points_is_the_next_points_time(tmp_path: Path) -> None:
    profiled = tiny(tmp_path)
    seconds = profiled._dense_times(np.array([1.0, 1.5, 2.0, 50.5, 99.0, 100.0]))
    assert seconds[0] < seconds[1]
    assert seconds[1:].tolist() == [seconds[-1]] * 5


def test_time_past_the_grid_extends_the_last_segment(tmp_path: Path) -> None:
    profiled = tiny(tmp_path)
    seconds = profiled._dense_times(np.array([1.0, 100.0, 199.0]))
    assert seconds[2] - seconds[1] == pytest.approx(seconds[1] - seconds[0])


def test_repeated_rows_are_averaged_and_dips_are_kept(tmp_path: Path) -> None:
    ops = len(PER_LAYER_OPS)
    rows = [
        ["1", "1"] + ["0.2"] * ops,
        ["1", "1"] + ["0.4"] * ops,
        ["8", "1"] + ["0.1"] * ops,
        ["16", "1"] + ["0.2"] * ops,
    ]
    profiled = ProfiledModel.from_csv(write_profile(tmp_path / "p.csv", rows), A100)
    expected = [32 * ops * 0.3e-3, 32 * ops * 0.1e-3, 32 * ops * 0.2e-3]
    assert profiled.dense_seconds.tolist() == pytest.approx(expected)


def test_a_profile_whose_time_falls_at_its_end_names_the_fall(tmp_path: Path) -> None:
    """Extrapolated along a fall, large batches would take negative time: the profile is
    refused with that cause, not with a negative latency later."""
    ops = len(PER_LAYER_OPS)
    rows = [["1", "1"] + ["0.3"] * ops, ["8", "1"] + ["0.1"] * ops]
    with pytest.raises(
        InvalidRecordError,
        match=r"profile 'fall\.csv': dense_seconds fall with the token count at the end of the "
        r"grid \(86\.4 ms at 1 tokens, 28\.8 ms at 8\)",
    ):
        ProfiledModel.from_csv(write_profile(tmp_path / "fall.csv", rows), A100)


def test_a_bad_number_names_the_file_and_line(tmp_path: Path) -> None:
    ops = len(PER_LAYER_OPS)
    rows = [["1", "1"] + ["0.1"] * ops, ["2", "1"] + ["x"] + ["0.1"] * (ops - 1)]
    path = write_profile(tmp_path / "bad.csv", rows)
    with pytest.raises(TraceFormatError, match=r"bad\.csv:3: .*accepted format"):
        ProfiledModel.from_csv(path, A100)


def test_a_short_row_names_the_file_and_line(tmp_path: Path) -> None:
    path = write_profile(tmp_path / "short.csv", [["1", "1", "0.1"]])
    with pytest.raises(TraceFormatError, match=r"short\.csv:2: 3 fields"):
        ProfiledModel.from_csv(path, A100)


def test_a_missing_column_is_named(tmp_path: Path) -> None:
    path = write_profile(tmp_path / "cols.csv", [["1", "1"]], header=HEADER[:2])
    with pytest.raises(TraceFormatError, match=r"cols\.csv:1: missing column.*mlp_up_proj"):
        ProfiledModel.from_csv(path, A100)


def test_a_tp_degree_absent_from_the_profile_lists_the_present_ones(tmp_path: Path) -> None:
    profiled = tiny(tmp_path)
    two = RooflineModel(gpu("a100-80g"), model("llama3-8b"), 2)
    with pytest.raises(UnknownNameError, match="known: 1"):
        ProfiledModel.from_csv(tmp_path / "tiny.csv", two)
    assert profiled.roofline.tp == 1


def test_a_profile_of_another_model_is_rejected(vidur_profile: Path) -> None:
    qwen = RooflineModel(gpu("a100-80g"), model("qwen2.5-7b"), 1)
    with pytest.raises(InvalidRecordError, match=r"n_head|n_embd"):
        ProfiledModel.from_csv(vidur_profile, qwen)
