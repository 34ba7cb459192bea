"""The population of a named workload is its sampler's distribution, exactly: probabilities
sum to one, the means match a large sample, and a cell's largest work bounds its requests."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slidingpolicy.bound.demand import demand
from slidingpolicy.bound.population import cells, population, rounded_uniform
from slidingpolicy.runs.specs import WorkloadSpec
from slidingpolicy.workloads import Poisson, make_workload
from tests.bound.conftest import HARDWARE, cost


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 5000), st.integers(0, 3000))
def test_a_rounded_uniform_segment_is_a_distribution(low: int, width: int) -> None:
    values, probs = rounded_uniform(float(low), float(low + width))
    assert probs.sum() == pytest.approx(1.0)
    assert np.all(probs > 0)
    u = (np.arange(100_000) + 0.5) / 100_000
    drawn, counts = np.unique(np.rint(low + width * u), return_counts=True)
    assert np.array_equal(drawn, values)
    assert counts / u.size == pytest.approx(probs, abs=2e-4)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["sharegpt", "arxiv", "mixed-v1"])
def test_cell_means_match_a_large_sample(name: str) -> None:
    """Within 1.5% per column on 100 000 requests (the sample's own error is below 0.6%)."""
    model = cost(HARDWARE[0])
    found = cells(population(WorkloadSpec(name)), model)
    assert found.mass.sum() == pytest.approx(1.0)
    exact = found.mass @ found.mean
    c = make_workload(name, 100_000, Poisson(1.0), 7).columns()
    sample = demand(model, c.prompt.astype(float), c.output.astype(float), c.ttft).mean(axis=0)
    assert exact == pytest.approx(sample, rel=0.015)


def test_tiers_split_each_decile_in_three() -> None:
    plain = population(WorkloadSpec("sharegpt"))
    tiered = population(WorkloadSpec("sharegpt", slo_tiers=True))
    assert len(tiered) == 3 * len(plain)
    assert sum(g.weight for g in tiered) == pytest.approx(1.0)


def test_a_cells_largest_work_bounds_each_of_its_requests() -> None:
    model = cost(HARDWARE[0])
    grids = population(WorkloadSpec("arxiv"))
    found = cells(grids, model)
    g = grids[3]
    first = sum(gr.prompt.starts.size * gr.output.starts.size for gr in grids[:3])
    p = g.prompt.values[: g.prompt.starts[1]]
    o = g.output.values[: g.output.starts[1]]
    work = demand(model, p[:, None], o[None, :], g.ttft[None, : o.size])
    assert np.all(work <= found.high[first] + 1e-9)
