"""The bound of a run specification: the fluid bound of its workload on its hardware, and the
trace bound of its trials (what `capacity`, `demo`, the report and `slidingpolicy bound` show).
"""

from __future__ import annotations

import functools
import math

import attrs

from slidingpolicy.bound.cost import IterationCost, iteration_cost
from slidingpolicy.bound.fluid import FluidBound, fluid_bound
from slidingpolicy.bound.population import population
from slidingpolicy.bound.trace import attainable
from slidingpolicy.metrics import SLO_TARGET
from slidingpolicy.runs.capacity_search import PRECISION, search
from slidingpolicy.runs.specs import HardwareSpec, RunSpec, WorkloadSpec


@functools.lru_cache(maxsize=16)
def cost_of(hardware: HardwareSpec, kv_capacity: int | None = None) -> IterationCost:
    """The iteration cost of a hardware spec (built once per process)."""
    return iteration_cost(hardware.build(), kv_capacity)


def limit(
    workload: WorkloadSpec,
    hardware: HardwareSpec,
    target: float = SLO_TARGET,
    kv_capacity: int | None = None,
) -> FluidBound:
    """The fluid bound of `workload` on `hardware` (its KV capacity `kv_capacity` tokens
    when given): no policy's long-run capacity exceeds it. (A named workload's population
    does not depend on its request count.)"""
    if workload.trace is None:
        workload = attrs.evolve(workload, requests=1)
    return _limit(workload, attrs.evolve(hardware, noise_sigma=0.0), target, kv_capacity)


def limit_of(spec: RunSpec, target: float = SLO_TARGET) -> FluidBound:
    """The fluid bound of a run's workload on its hardware and KV cache."""
    return limit(spec.workload, spec.hardware, target, spec.options.kv_capacity_tokens)


@functools.lru_cache(maxsize=64)
def _limit(
    workload: WorkloadSpec, hardware: HardwareSpec, target: float, kv_capacity: int | None
) -> FluidBound:
    return fluid_bound(population(workload), cost_of(hardware, kv_capacity), target)


def replicas_limit(bound: float, replicas: int) -> float:
    """The long-run limit of `replicas` replicas of one hardware behind any router: `replicas`
    times one replica's bound. The replicas share nothing and the bound's program is linear,
    so averaging a cluster's fluid schedule over the permutations of its replicas gives each
    1/N of the arrivals and of the misses allowed: one replica's schedule at 1/N of the rate,
    within its bound. Equal shares of a Poisson stream reach it, so no smaller figure holds."""
    return replicas * bound


def share(capacity: float, bound: float) -> float:
    """A capacity as a share of the bound (NaN without a bound)."""
    return capacity / bound if bound > 0.0 and math.isfinite(bound) else math.nan


@attrs.frozen(slots=True)
class TrialBound:
    """The trace bound's capacity on one seed: the highest passing rate of the capacity
    search run on the bound, and the lowest failing one above it."""

    seed: int
    capacity: float
    failing: float


def trial_bound(
    base: RunSpec, start: float = 1.0, precision: float = PRECISION, target: float = SLO_TARGET
) -> TrialBound:
    """The capacity the trace bound allows on the trials of `base` (its seed, size and
    hardware): the capacity search at the same rates, on whether ≥ `target` of the counted
    requests can attain. A schedule may drop a steady-state trial's warm-up and tail, so the
    bound reads the counted requests alone (`Workload.measured`). At every rate it allows at
    least the simulated attainment, so it is never below any policy's capacity on these
    trials."""
    cost = cost_of(base.hardware, base.options.kv_capacity_tokens)
    misses = base.workload.requests - math.ceil(target * base.workload.requests)

    def allowed(rate: float) -> float:
        trial = base.with_rate(rate)
        workload = trial.workload.build(trial.arrivals, base.seed).measured()
        return 1.0 if attainable(workload, cost, misses) else 0.0

    passing, failing = search(allowed, start, precision, target)
    return TrialBound(base.seed, passing, failing)
