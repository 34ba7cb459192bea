"""SLO defaults per data set, and QoServe's tiers."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from slidingpolicy.errors import InvalidRecordError, UnknownNameError
from slidingpolicy.workloads import dataset_slo, tiered_slos


def test_dataset_defaults() -> None:
    assert (dataset_slo("sharegpt").ttft, dataset_slo("sharegpt").tbt) == (3.0, 0.1)
    assert (dataset_slo("arxiv").ttft, dataset_slo("arxiv").tbt) == (10.0, 0.2)


def test_slo_scale_multiplies_both_limits() -> None:
    slo = dataset_slo("arxiv", 0.5)
    assert (slo.ttft, slo.tbt) == (5.0, 0.1)


def test_an_unknown_data_set_lists_the_known_ones() -> None:
    with pytest.raises(UnknownNameError, match="arxiv, chat, documents, sharegpt"):
        dataset_slo("lmsys")


def test_a_non_positive_scale_is_refused() -> None:
    with pytest.raises(InvalidRecordError, match="slo_scale"):
        dataset_slo("arxiv", -1.0)


def test_tiers_are_drawn_uniformly() -> None:
    tiers, _, _ = tiered_slos(np.full(30_000, 100), np.random.default_rng(0))
    assert np.bincount(tiers).tolist() == pytest.approx([10_000] * 3, rel=0.05)


def test_the_interactive_tier_has_six_seconds_and_fifty_ms() -> None:
    tiers, ttft, tbt = tiered_slos(np.full(300, 100), np.random.default_rng(0), 2.0)
    assert set(ttft[tiers == 0]) == {12.0}
    assert set(tbt[tiers == 0]) == {0.1}


def test_batch_tiers_derive_ttft_from_their_ttlt() -> None:
    tiers, ttft, tbt = tiered_slos(np.full(300, 100), np.random.default_rng(0))
    assert set(tbt[tiers > 0]) == {0.4}
    assert set(ttft[tiers == 1]) == {600.0 - 100 * 0.4}
    assert set(ttft[tiers == 2]) == {1800.0 - 100 * 0.4}


@given(
    st.lists(st.integers(1, 10_000), min_size=1, max_size=50),
    st.floats(0.1, 10.0),
    st.integers(0, 2**32),
)
def test_every_batch_request_can_meet_its_ttlt_with_a_positive_ttft(
    outputs: list[int], scale: float, seed: int
) -> None:
    out = np.array(outputs)
    tiers, ttft, tbt = tiered_slos(out, np.random.default_rng(seed), scale)
    batch = tiers > 0
    ttlt = np.where(tiers == 1, 600.0, 1800.0) * scale
    last_deadline = ttft + (out - 1) * tbt
    assert np.all(last_deadline[batch] <= ttlt[batch] * (1 + 1e-12))
    assert np.all(ttft[batch] >= 6.0 * scale * (1 - 1e-12))
    assert np.all(tbt[batch] <= 0.4 * scale)
    assert np.all(tbt > 0)
