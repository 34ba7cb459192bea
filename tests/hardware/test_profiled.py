"""The profiled model reads Vidur's measured timings and agrees with the roofline's physics."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slidingpolicy.errors import (
    InvalidRecordError,
    ProfileEnvelopeWarning,
    TraceFormatError,
    UnknownNameError,
)
from slidingpolicy.hardware import ProfiledModel, RooflineModel, build_hardware, gpu, model
from slidingpolicy.hardware.catalog import ModelShape
from slidingpolicy.hardware.profiled import PER_LAYER_OPS, monotone_envelope

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


@pytest.mark.slow
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
    with pytest.warns(ProfileEnvelopeWarning, match="the last 2 of 3 points"):
        profiled = ProfiledModel.from_csv(write_profile(tmp_path / "p.csv", rows), A100)
    expected = [32 * ops * 0.3e-3, 32 * ops * 0.1e-3, 32 * ops * 0.2e-3]
    assert profiled.dense_seconds.tolist() == pytest.approx(expected)


def dipping(tmp_path: Path, totals_ms: dict[int, float], name: str = "dip.csv") -> Path:
    """A TP1 profile whose per-iteration dense time (32 layers of 9 ops) is `totals_ms`."""
    ops = len(PER_LAYER_OPS)
    rows = [[str(t), "1"] + [repr(ms / (32 * ops))] * ops for t, ms in totals_ms.items()]
    return write_profile(tmp_path / name, rows)


H100_END = {2048: 42.1, 4000: 81.64, 4032: 84.88, 4064: 83.78, 4096: 83.33}
"""Per-iteration ms at the end of Vidur's H100 Llama-2-7B grid (TP1): the last two dip."""


def test_a_profile_whose_last_points_dip_loads_and_says_so_in_one_line(tmp_path: Path) -> None:
    path = dipping(tmp_path, H100_END)
    with pytest.warns(ProfileEnvelopeWarning) as caught:
        profiled = ProfiledModel.from_csv(path, A100)
    assert [str(w.message) for w in caught] == [
        f"{path} (tp 1): the last 2 of 5 points lie below an earlier one (at most 1.8%); past "
        "4096 tokens time grows from their monotone envelope (84.88 ms)"
    ]
    assert 1e3 * profiled.dense_seconds == pytest.approx(list(H100_END.values()))
    beyond = profiled._dense_times(np.array([4097.0, 4200.0, 8192.0]))
    assert 84.88e-3 < beyond[0] < beyond[1] < beyond[2]


def test_time_past_the_grid_grows_at_the_rate_of_its_top_half(tmp_path: Path) -> None:
    """One 32-token segment's slope is noise at 1 %; the secant over the top half of the grid
    (2048 to 4096 tokens, on the envelope) is not."""
    with pytest.warns(ProfileEnvelopeWarning):
        profiled = ProfiledModel.from_csv(dipping(tmp_path, H100_END), A100)
    rate = (84.88e-3 - 42.1e-3) / 2048
    beyond = profiled._dense_times(np.array([4096.0 + 1, 4096.0 + 2049]))
    assert beyond[1] - beyond[0] == pytest.approx(2048 * rate)
    assert beyond[0] == pytest.approx(84.88e-3 + rate)


def test_a_profile_that_rises_to_its_end_is_read_in_silence(tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        profiled = ProfiledModel.from_csv(dipping(tmp_path, {8: 1.0, 16: 0.5, 24: 2.0}), A100)
    assert 1e3 * profiled.dense_seconds == pytest.approx([1.0, 0.5, 2.0])


@pytest.mark.parametrize("bad", ["-0.01", "nan", "inf"])
def test_a_time_no_kernel_can_take_is_refused_by_file_line_and_field(
    tmp_path: Path, bad: str
) -> None:
    ops = len(PER_LAYER_OPS)
    rows = [["8", "1"] + ["0.1"] * ops, ["16", "1"] + ["0.1"] * (ops - 1) + [bad]]
    path = write_profile(tmp_path / "bad.csv", rows)
    with pytest.raises(TraceFormatError, match=rf"bad\.csv:3: time_stats\.add\.median='{bad}'"):
        ProfiledModel.from_csv(path, A100)


def test_zero_tokens_are_refused_by_file_and_line(tmp_path: Path) -> None:
    ops = len(PER_LAYER_OPS)
    path = write_profile(tmp_path / "zero.csv", [["0", "1"] + ["0.1"] * ops])
    with pytest.raises(TraceFormatError, match=r"zero\.csv:2: num_tokens='0' must be an int >= 1"):
        ProfiledModel.from_csv(path, A100)


SERIES = st.lists(st.floats(0, 1e3, allow_subnormal=False), min_size=1, max_size=40)


@given(SERIES)
def test_the_envelope_is_monotone_above_the_series_and_the_series_where_it_rises(
    values: list[float],
) -> None:
    series = np.array(values)
    envelope = monotone_envelope(series)
    assert np.all(np.diff(envelope) >= 0)
    assert np.all(envelope >= series)
    rises = [all(v >= earlier for earlier in values[:i]) for i, v in enumerate(values)]
    assert np.array_equal(envelope[rises], series[rises])
    if np.all(np.diff(series) >= 0):
        assert np.array_equal(envelope, series)


@given(
    st.lists(
        st.tuples(st.integers(1, 300), st.floats(0, 1.0, allow_subnormal=False)),
        min_size=2,
        max_size=20,
    ),
    st.lists(st.floats(0, 1e5), min_size=1, max_size=8),
)
def test_measured_points_are_kept_and_time_past_the_grid_never_falls_below_them(
    steps: list[tuple[int, float]], past: list[float]
) -> None:
    tokens = np.cumsum([gap for gap, _ in steps]).astype(np.float64)
    seconds = np.array([s for _, s in steps])
    profiled = ProfiledModel(A100, "p.csv", tokens, seconds)
    assert np.array_equal(profiled._dense_times(tokens), seconds)
    at = np.sort(tokens[-1] + 1 + np.array(past))
    beyond = profiled._dense_times(at)
    assert np.all(beyond >= seconds.max())
    assert np.all(np.diff(beyond) >= 0)
    assert [profiled._dense_time(t) for t in at.tolist()] == beyond.tolist()


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


LLAMA2_7B = ModelShape("llama-2-7b (Vidur's shape)", 32, 4096, 32, 32, 11008, 32768)
"""Llama-2-7B as Vidur's H100 profile gives it (vocab_size 32768, the checkpoint's 32000
padded)."""


def test_vidurs_h100_llama2_profile_loads_at_every_tp(vidur_h100_profile: Path) -> None:
    """Its TP1 grid ends 84.88, 83.78, 83.33 ms at 4032, 4064, 4096 tokens."""
    with pytest.warns(ProfileEnvelopeWarning) as caught:
        models = [
            ProfiledModel.from_csv(vidur_h100_profile, RooflineModel(gpu("h100"), LLAMA2_7B, tp))
            for tp in (1, 2, 4, 8)
        ]
    lines = [str(w.message).removeprefix(str(vidur_h100_profile)) for w in caught]
    assert lines[0] == (
        " (tp 1): the last 2 of 259 points lie below an earlier one (at most 1.8%); past 4096 "
        "tokens time grows from their monotone envelope (84.88 ms)"
    )
    for profiled in models:
        beyond = profiled._dense_times(np.array([4097.0, 8192.0]))
        assert profiled.dense_seconds.max() <= beyond[0] < beyond[1]
