"""The hardware model of a real engine's measured steps: one price per batch on every path,
monotone like the fit it comes from, noise drawn deterministically from the engine's normals
(the noise itself: test_ratio_noise.py), and the engine runs on it as on any model."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from slidingpolicy.engine import EngineOptions, simulate
from slidingpolicy.errors import InvalidRecordError
from slidingpolicy.hardware import build_hardware
from slidingpolicy.hardware.traced import UNLIMITED_KV, TracedModel, from_samples, traced_model
from slidingpolicy.runs.results import dumps, outcome_rows
from slidingpolicy.step_trace import TraceStep, step_sample
from slidingpolicy.workloads import Poisson, make_workload
from tests.engine.conftest import Fcfs

chunk = st.tuples(st.integers(1, 2048), st.integers(0, 8192))
batch = st.lists(chunk, min_size=1, max_size=24)
normal = st.floats(-8.0, 8.0)


@cache
def steps() -> tuple[TraceStep, ...]:
    """The steps of a short run on the default hardware (rtx3090, qwen2.5-7b, TP2)."""
    found: list[TraceStep] = []
    workload = make_workload("mixed-v1", 60, Poisson(1.5), 2)
    simulate(Fcfs(), workload, build_hardware(), 2, on_step=found.append)
    return tuple(found)


@cache
def model() -> TracedModel:
    samples = [s for s in map(step_sample, steps()) if not isinstance(s, str)]
    return from_samples(samples, "trace:test")


@pytest.fixture(autouse=True, scope="module")
def _warm() -> None:
    """Fit the model before the properties run, so that no example pays for it."""
    model()


def arrays(pairs: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    chunks, contexts = zip(*pairs, strict=True)
    return np.array(chunks, dtype=np.int64), np.array(contexts, dtype=np.int64)


@given(batch)
def test_arrays_and_lists_give_the_same_latency(pairs: list[tuple[int, int]]) -> None:
    chunks, contexts = arrays(pairs)
    lists = [c for c, _ in pairs], [u for _, u in pairs]
    assert model().latency(chunks, contexts) == model().latency_of(*lists)


@given(st.integers(1, 256), st.lists(st.integers(0, 10**6), min_size=1, max_size=40))
def test_decode_runs_price_as_single_iterations(decodes: int, totals: list[int]) -> None:
    m = model()
    run = m.decode_latencies(decodes, np.array(totals, dtype=np.int64)).tolist()
    pricer = m.decode_pricer(decodes)
    for total, latency in zip(totals, run, strict=True):
        contexts = [total // decodes + (i < total % decodes) for i in range(decodes)]
        assert latency == pricer(total) == m.latency_of([1] * decodes, contexts)


@given(batch, st.integers(0, 23), st.integers(1, 64), chunk)
def test_a_prefill_token_or_a_chunk_more_never_lowers_the_latency(
    pairs: list[tuple[int, int]], which: int, more: int, added: tuple[int, int]
) -> None:
    """Monotone as the fit is (proofs/monotonicity.md): a token more in a prefill chunk
    (c ≥ 2), or one more chunk, decode or prefill. (A 1-token chunk counts as a decode,
    eq. 4, so growing it to 2 tokens changes its class and may lower T̂.)"""
    m = model()
    chunks, contexts = [c for c, _ in pairs], [u for _, u in pairs]
    base = m.latency_of(chunks, contexts)
    i = which % len(chunks)
    if chunks[i] >= 2:
        grown = list(chunks)
        grown[i] += more
        assert m.latency_of(grown, contexts) >= base
    assert m.latency_of([*chunks, added[0]], [*contexts, added[1]]) >= base


@given(normal, normal, st.floats(0.0, 10.0))
def test_the_noise_is_deterministic_and_non_decreasing_in_z(
    a: float, b: float, latency: float
) -> None:
    low, high = sorted((a, b))
    m = model()
    assert m.with_noise(latency, low) == m.with_noise(latency, low)
    assert m.with_noise(latency, low) <= m.with_noise(latency, high)


@given(batch, st.integers(0, 2**32))
def test_sample_is_deterministic_for_the_same_seed(pairs: list[tuple[int, int]], seed: int) -> None:
    chunks, contexts = arrays(pairs)
    m = model()
    first = m.sample(chunks, contexts, np.random.default_rng(seed))
    assert first == m.sample(chunks, contexts, np.random.default_rng(seed))
    z = float(np.random.default_rng(seed).standard_normal())
    assert first == m.with_noise(m.latency(chunks, contexts), z)


def test_the_fit_tracks_the_hardware_it_was_measured_on() -> None:
    """On the trace's own batches, the fit is within a few per cent of the hardware's
    noise-free latency (the trace's noise is 2% log-normal), and the ratios centre on 1."""
    hardware = build_hardware()
    errors = []
    for sample in (s for s in map(step_sample, steps()) if not isinstance(s, str)):
        truth = hardware.latency_of(list(sample.chunks), list(sample.contexts))
        errors.append(model().latency_of(list(sample.chunks), list(sample.contexts)) / truth - 1)
    assert np.median(np.abs(errors)) < 0.02
    assert abs(float(np.median(model().noise.ratios)) - 1.0) < 0.01
    assert 0.01 < model().noise_sigma < 0.05


@pytest.mark.parametrize("kv", [None, 12000])
def test_closed_form_equals_stepping_on_a_traced_model(kv: int | None) -> None:
    def document(closed_form: bool) -> str:
        workload = make_workload("mixed-v1", 60, Poisson(1.5), 3)
        options = EngineOptions(strict=True, closed_form=closed_form, kv_capacity_tokens=kv)
        out = simulate(Fcfs(), workload, model(), 3, options)
        ids = [r.id for r in workload.requests]
        return dumps({"metrics": out.metrics.to_dict(), "requests": outcome_rows(ids, out.outcome)})

    assert document(True) == document(False)


def test_the_kv_cache_is_unlimited_unless_given() -> None:
    assert model().kv_capacity_tokens == UNLIMITED_KV
    assert model().kv_capacity_tokens % model().kv_block_size == 0


def test_a_trace_and_a_profile_csv_are_refused_together(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text("".join(s.to_line() + "\n" for s in steps()))
    read = traced_model([trace])
    assert (read.name, read.fit.source) == ("trace:t.jsonl", "trace:t.jsonl")
    assert read.fit.coefficients.tolist() == model().fit.coefficients.tolist()
    assert read.noise.ratios.tolist() == model().noise.ratios.tolist()
    assert traced_model([trace]) is read
    with pytest.raises(InvalidRecordError, match="profile"):
        build_hardware(profile=tmp_path / "p.csv", trace=[trace])
