"""Named workloads: exact mix proportions, determinism, and the entry point's errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from slidingpolicy.errors import InvalidRecordError, UnknownNameError
from slidingpolicy.workloads import Burst, Poisson, TraceTimes, make_workload, workload_names
from slidingpolicy.workloads.make import mix_counts


@given(st.lists(st.integers(1, 9), min_size=1, max_size=4), st.integers(0, 100_000))
def test_mix_counts_sum_to_n_and_stay_within_one_of_the_proportion(
    weights: list[int], n: int
) -> None:
    counts = mix_counts(tuple(weights), n)
    assert sum(counts) == n
    for count, weight in zip(counts, weights, strict=True):
        assert abs(count - n * weight / sum(weights)) < 1


@pytest.mark.parametrize(("name", "sharegpt"), [("mixed-v1", 750), ("mixed-v2", 833)])
def test_mixes_have_their_request_count_ratio(name: str, sharegpt: int) -> None:
    workload = make_workload(name, 1000, Poisson(2.0), seed=3)
    sources = [r.source for r in workload.requests]
    assert sources.count("sharegpt") == sharegpt
    assert sources.count("arxiv") == 1000 - sharegpt


def test_mixes_interleave_their_sources() -> None:
    sources = [r.source for r in make_workload("mixed-v1", 400, Poisson(2.0), 0).requests]
    assert "arxiv" in sources[:100]
    assert "sharegpt" in sources[300:]


def test_pure_workloads_come_from_one_source() -> None:
    for name in ("sharegpt", "arxiv"):
        workload = make_workload(name, 50, Poisson(2.0), 0)
        assert {r.source for r in workload.requests} == {name}


@given(st.sampled_from(workload_names()), st.integers(0, 2**32), st.integers(1, 200))
def test_same_seed_gives_an_identical_workload(name: str, seed: int, n: int) -> None:
    assert make_workload(name, n, Poisson(3.0), seed) == make_workload(name, n, Poisson(3.0), seed)


def test_another_seed_gives_another_workload() -> None:
    assert make_workload("sharegpt", 50, Poisson(3.0), 1) != make_workload(
        "sharegpt", 50, Poisson(3.0), 2
    )


def test_changing_the_arrivals_leaves_the_lengths_alone() -> None:
    a = make_workload("mixed-v1", 300, Poisson(1.0), 5).columns()
    b = make_workload("mixed-v1", 300, Burst(1.0, 9.0, 10.0, 5.0), 5).columns()
    assert np.array_equal(a.prompt, b.prompt)
    assert np.array_equal(a.output, b.output)
    assert not np.array_equal(a.arrival, b.arrival)


def test_cpu_mixed_is_chat_and_documents_seven_to_three_in_their_ranges_and_slos() -> None:
    workload = make_workload("cpu-mixed", 1000, Poisson(2.0), seed=4)
    chat = [r for r in workload.requests if r.source == "chat"]
    documents = [r for r in workload.requests if r.source == "documents"]
    assert (len(chat), len(documents)) == (700, 300)
    for requests, prompt, slo in (
        (chat, (32, 256), (1.0, 0.05)),
        (documents, (512, 1024), (3.0, 0.05)),
    ):
        prompts = [r.prompt_tokens for r in requests]
        outputs = [r.output_tokens for r in requests]
        assert prompt[0] <= min(prompts) < prompt[0] + 10
        assert prompt[1] - 10 < max(prompts) <= prompt[1]
        assert 16 <= min(outputs) < 20
        assert 92 < max(outputs) <= 96
        assert {(r.ttft_slo, r.tbt_slo) for r in requests} == {slo}


def test_requests_are_numbered_in_arrival_order_with_dataset_slos() -> None:
    workload = make_workload("mixed-v1", 100, Poisson(2.0), 0, slo_scale=2.0)
    assert [r.id for r in workload.requests] == [f"r{i}" for i in range(100)]
    for r in workload.requests:
        assert (r.ttft_slo, r.tbt_slo) == ((6.0, 0.2) if r.source == "sharegpt" else (20.0, 0.4))


def test_tiered_slos_replace_the_dataset_ones() -> None:
    ttfts = {
        r.ttft_slo for r in make_workload("sharegpt", 300, Poisson(2.0), 0, slo_tiers=True).requests
    }
    assert 6.0 in ttfts
    assert max(ttfts) > 500


def test_an_unknown_workload_lists_the_known_ones() -> None:
    with pytest.raises(UnknownNameError, match=r"arxiv, cpu-mixed, mixed-v1, mixed-v2, sharegpt"):
        make_workload("lmsys", 10, Poisson(1.0), 0)


@pytest.mark.parametrize("n", [0, -3])
def test_zero_requests_is_an_error(n: int) -> None:
    with pytest.raises(InvalidRecordError, match="num_requests"):
        make_workload("sharegpt", n, Poisson(1.0), 0)


def test_a_synthetic_workload_cannot_replay_trace_times() -> None:
    with pytest.raises(InvalidRecordError, match="arrivals"):
        make_workload("sharegpt", 10, TraceTimes(), 0)


def test_a_bad_slo_scale_is_an_error() -> None:
    with pytest.raises(InvalidRecordError, match="slo_scale"):
        make_workload("sharegpt", 10, Poisson(1.0), 0, slo_scale=0.0)
