"""The tile-quantized roofline: a staircase at tile multiples, never falling, and the smooth
roofline left exactly as it was."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slidingpolicy.errors import InvalidRecordError, UnknownNameError
from slidingpolicy.hardware import (
    GemmTiling,
    QuantizedRooflineModel,
    RooflineModel,
    Tile,
    build_hardware,
    gpu,
    hardware_names,
    model,
)
from slidingpolicy.hardware.quantized import TILINGS

CONFIGS = [
    ("rtx3090", "qwen2.5-7b", 2),
    ("rtx3090", "llama3-8b", 1),
    ("a100-80g", "llama3-8b", 1),
    ("a100-80g", "qwen2.5-7b", 4),
    ("h100", "llama3-8b", 8),
]
HARDWARE = [
    QuantizedRooflineModel(RooflineModel(gpu(g), model(m), tp), TILINGS[g]) for g, m, tp in CONFIGS
]
hardware = st.sampled_from(HARDWARE)
chunk = st.one_of(st.just(1), st.integers(1, 8192))
batch = st.lists(st.tuples(chunk, st.integers(0, 65536)), min_size=1, max_size=40)


def arrays(pairs: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    return (
        np.array([c for c, _ in pairs], dtype=np.int64),
        np.array([u for _, u in pairs], dtype=np.int64),
    )


def linear_slope(hw: QuantizedRooflineModel) -> float:
    """Seconds per token of the dense time's parts that are linear in tokens (memory side)."""
    t = hw.roofline.terms
    per_layer = sum(g.token_bytes for g in hw._gemms) + t.elementwise
    return (t.layers * per_layer + t.embedding) / t.bandwidth


@settings(max_examples=300)
@given(hardware, batch)
def test_latency_is_positive_and_the_scalar_path_is_bit_identical(
    hw: QuantizedRooflineModel, pairs: list[tuple[int, int]]
) -> None:
    chunks, contexts = arrays(pairs)
    reference = hw.latency_arrays(chunks, contexts)
    assert reference > 0
    assert hw.latency(chunks, contexts) == reference
    assert hw.latency_of(chunks.tolist(), contexts.tolist()) == reference


@settings(max_examples=300)
@given(hardware, st.integers(1, 16384))
def test_dense_time_never_falls_when_a_token_is_added(
    hw: QuantizedRooflineModel, tokens: int
) -> None:
    assert hw._dense_time(tokens + 1.0) >= hw._dense_time(float(tokens))


@settings(max_examples=200)
@given(hardware, batch, st.data())
def test_a_batch_never_gets_faster_with_one_more_token(
    hw: QuantizedRooflineModel, pairs: list[tuple[int, int]], data: st.DataObject
) -> None:
    i = data.draw(st.integers(0, len(pairs) - 1))
    grown = list(pairs)
    grown[i] = (pairs[i][0] + 1, pairs[i][1])
    assert hw.latency(*arrays(grown)) >= hw.latency(*arrays(pairs))


@settings(max_examples=300)
@given(hardware, st.integers(1, 16384))
def test_steps_happen_only_at_tile_multiples(hw: QuantizedRooflineModel, tokens: int) -> None:
    rows = min(t.rows for t in hw.tiling.tiles)
    rise = hw._dense_time(tokens + 1.0) - hw._dense_time(float(tokens))
    if tokens % rows:
        assert rise <= linear_slope(hw) * (1 + 1e-9) + 1e-15


@pytest.mark.parametrize("hw", HARDWARE, ids=lambda h: h.name)
def test_there_are_steps_and_each_is_at_a_tile_multiple(hw: QuantizedRooflineModel) -> None:
    tokens = np.arange(1.0, 4097.0)
    rises = np.diff(hw._dense_times(tokens))
    steps = tokens[:-1][rises > 2 * linear_slope(hw)]
    rows = min(t.rows for t in hw.tiling.tiles)
    assert steps.size > 0
    assert np.all(steps % rows == 0)


def test_the_a100_steps_at_the_measured_tile_edges() -> None:
    hw = build_hardware("a100-80g-quantized", "llama3-8b", 1)
    assert isinstance(hw, QuantizedRooflineModel)
    dense = hw._dense_times(np.array([128.0, 129.0, 136.0, 256.0, 264.0]))
    assert dense[1] > 1.25 * dense[0]  # Vidur: 128 -> 136 tokens, +37 %
    assert dense[2] == pytest.approx(dense[1], rel=5e-3)  # a plateau to 136
    assert dense[4] > 1.15 * dense[3]  # Vidur: 256 -> 264, +36 %


@given(hardware, batch, st.integers(0, 2**32 - 1))
def test_sampling_is_deterministic_given_the_seed(
    hw: QuantizedRooflineModel, pairs: list[tuple[int, int]], seed: int
) -> None:
    chunks, contexts = arrays(pairs)
    first = hw.sample(chunks, contexts, np.random.default_rng(seed))
    assert hw.sample(chunks, contexts, np.random.default_rng(seed)) == first


@settings(max_examples=200)
@given(hardware, st.integers(1, 512), st.lists(st.integers(0, 2**22), min_size=1, max_size=20))
def test_decode_pricer_is_bit_identical_to_decode_latencies(
    hw: QuantizedRooflineModel, n: int, contexts: list[int]
) -> None:
    price = hw.decode_pricer(n)
    expected = hw.decode_latencies(n, np.array(contexts, dtype=np.int64)).tolist()
    assert [price(u) for u in contexts] == expected


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ((), (0.05339498030561398, 0.3346979139361545, 0.018878827409035407)),
        (
            ("a100-80g", "llama3-8b", 1),
            (0.024837401386621823, 0.14972612558327592, 0.01610687858754291),
        ),
        (
            ("h100", "qwen2.5-7b", 1),
            (0.010045776008637902, 0.04835906239057912, 0.009654492835024876),
        ),
    ],
)
def test_the_smooth_rooflines_are_unchanged(
    args: tuple[str, str, int], expected: tuple[float, float, float]
) -> None:
    """Latencies of the roofline before the quantized model existed, to the last bit."""
    hw = build_hardware(*args)
    assert isinstance(hw, RooflineModel)
    mixed = hw.latency(np.array([1, 1, 300, 1]), np.array([1000, 20, 0, 4000]))
    prefill = hw.latency(np.array([2048]), np.array([0]))
    decodes = hw.latency(np.ones(64, np.int64), np.full(64, 512))
    assert (mixed, prefill, decodes) == expected


def test_every_gpu_has_a_quantized_model_by_name() -> None:
    for g in ("rtx3090", "a100-80g", "h100"):
        assert f"{g}-quantized" in hardware_names()
        assert "tile-quantized" in build_hardware(f"{g}-quantized", "llama3-8b", 1).name


def test_an_unknown_hardware_name_lists_every_known_one() -> None:
    with pytest.raises(UnknownNameError, match=r"a100-80g-measured.*h100-quantized"):
        build_hardware("tpu-quantized")


def test_a_profile_needs_a_plain_roofline() -> None:
    with pytest.raises(InvalidRecordError, match="profile"):
        build_hardware("a100-80g-quantized", "llama3-8b", 1, Path("any.csv"))


@pytest.mark.parametrize(
    ("make", "field"),
    [
        (lambda: Tile(0, 64, 0.5), "rows"),
        (lambda: Tile(64, 64, 0.0), "efficiency"),
        (lambda: Tile(64, 64, 1.5), "efficiency"),
        (lambda: GemmTiling("x", 0, (Tile(64, 64, 0.5),), 0.0), "sms"),
        (lambda: GemmTiling("x", 10, (), 0.0), "tiles"),
        (lambda: GemmTiling("x", 10, (Tile(64, 64, 0.5),), -1.0), "ramp_waves"),
    ],
)
def test_bad_tiling_values_name_the_field(make: Callable[[], object], field: str) -> None:
    with pytest.raises(InvalidRecordError, match=field):
        make()


def test_the_packaged_a100_tiling_is_what_the_fit_script_finds(vidur_profile: Path) -> None:
    script = Path(__file__).resolve().parents[2] / "scripts" / "fit_quantized.py"
    spec = importlib.util.spec_from_file_location("fit_quantized", script)
    assert spec is not None
    assert spec.loader is not None
    fit_quantized = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fit_quantized)
    tokens, seconds = fit_quantized.measured_gemms(vidur_profile, 1)
    inside = tokens <= fit_quantized.FIT_TOKENS
    a100 = RooflineModel(gpu("a100-80g"), model("llama3-8b"), 1)
    assert fit_quantized.fit(a100, tokens[inside], seconds[inside]) == TILINGS["a100-80g"]
