"""The fluid bound: on one request type over a linear cost it is the closed form; it rises
when requests may miss more, when SLOs loosen and when the hardware is faster."""

from __future__ import annotations

import numpy as np
import pytest

from slidingpolicy.bound.cost import linear_cost
from slidingpolicy.bound.fluid import fluid_bound
from slidingpolicy.bound.pacing import iteration_rate
from slidingpolicy.bound.population import Grid, point_grids

B0, B1 = 0.01, 1e-4


def _points(prompts: list[int], outputs: list[int], ttft: float, tbt: float) -> tuple[Grid, ...]:
    n = len(prompts)
    return tuple(
        point_grids(np.array(prompts), np.array(outputs), np.full(n, ttft), np.full(n, tbt))
    )


def test_one_request_type_on_a_linear_cost_is_the_closed_form() -> None:
    """K iterations per request (the pacing floor ρ/λ) cost b0 each and the 99% of the tokens
    that must run cost b1 each: 1/λ = b0·ρ(λ)/λ + b1·0.99·(p + o − 1), at its fixed point."""
    p, o, ttft, tbt = 500, 50, 2.0, 0.1
    found = fluid_bound(_points([p], [o], ttft, tbt), linear_cost(B0, B1))
    window = ttft + (o - 1) * tbt
    lam = 1.0
    for _ in range(200):
        rho = iteration_rate(np.array([float(o)]), np.array([window]), np.ones(1), lam, 0.01)
        lam = (1.0 - rho * B0) / (B1 * 0.99 * (p + o - 1))
    assert found.bound == pytest.approx(lam, rel=2e-4)
    assert found.bound >= lam * (1 - 1e-9)
    assert "pacing" in found.binding


def test_allowing_no_miss_never_raises_the_bound() -> None:
    grids = _points([100, 800, 3000], [20, 300, 900], 3.0, 0.1)
    cost = linear_cost(B0, B1)
    assert fluid_bound(grids, cost, target=1.0).bound <= fluid_bound(grids, cost).bound


def test_looser_slos_never_lower_the_bound() -> None:
    cost = linear_cost(B0, B1)
    tight = fluid_bound(_points([100, 800, 3000], [20, 300, 900], 1.0, 0.05), cost)
    loose = fluid_bound(_points([100, 800, 3000], [20, 300, 900], 4.0, 0.2), cost)
    assert tight.bound <= loose.bound


def test_a_faster_gpu_raises_the_bound() -> None:
    grids = _points([100, 800, 3000], [20, 300, 900], 3.0, 0.1)
    assert (
        fluid_bound(grids, linear_cost(B0, B1)).bound
        < fluid_bound(grids, linear_cost(B0 / 2, B1 / 2)).bound
    )
