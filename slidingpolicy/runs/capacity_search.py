"""Capacity (goodput): the highest Poisson rate at which SLO attainment is ≥ 99%.

Every trial simulates the same number of requests with the same seed (so the same lengths: the
workload's streams are independent of the rate). A search brackets the capacity by doubling or
halving from `start` (or starts from trials already run, e.g. a sweep's), then narrows
[passing, failing] by bisection in log space until
failing / passing ≤ 1 + precision (2.5%). The capacity is the highest passing rate; a rate of
`MAX_RATE` or more that still passes ends the search there (failing: infinite). Attainment
need not be monotone in the rate; the search keeps the lowest failing rate above the highest
passing one. A trial stops as soon as more requests have missed than 99% allows
(`EngineOptions.miss_budget`); its recorded attainment is then what it had reached.

Several searches (one per policy or seed) run round by round over one set of workers (local
processes or a Ray cluster, `runs.workers`), so every CPU stays busy until the last search
ends. The rates tried never depend on the number of workers (k-section with k taken from the
worker count did, and so did the answer: 0.8229 with one worker, 0.8213 with two), so the
result is the same on any machine and any cluster.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator, Iterable, Sequence
from typing import Any

import attrs

from slidingpolicy import _validate
from slidingpolicy.errors import InvalidRecordError
from slidingpolicy.metrics import SLO_TARGET
from slidingpolicy.runs.specs import RunSpec, RunSummary, run
from slidingpolicy.runs.workers import trial_runner

PRECISION = 0.025
MIN_RATE = 1.0 / 64
MAX_RATE = 4096.0
UNBOUNDED = f"≥ {MAX_RATE:g}"
"""How a capacity whose search still passed at `MAX_RATE` reads: a floor, not a figure to
rank or divide (`UNBOUNDED_NOTE` says so under a table that shows one)."""
UNBOUNDED_NOTE = (
    f"{UNBOUNDED} (not bounded by these trials): the search still passed at {MAX_RATE:g} req/s, "
    "the highest rate it tries; not ranked, and no share of the bound"
)
MAX_TRIALS = 25
"""The most trials one search takes from any start in [MIN_RATE, MAX_RATE]: one, 18 to
bracket the capacity by doubling or halving (log2(MAX_RATE / MIN_RATE)), 6 to bisect the
bracket to `PRECISION` (tests/runs/test_capacity_search.py)."""

Trial = tuple[float, float]
Search = Generator[list[float], list[float], tuple[float, float]]


@attrs.frozen(slots=True)
class CapacityResult:
    """The capacity of one policy on one seed and every trial (rate, attainment) it used."""

    policy: str
    capacity: float
    failing: float
    trials: tuple[Trial, ...]
    seed: int = 0

    @property
    def bounded(self) -> bool:
        """Whether a trial failed above the capacity (not: the search passed at its cap)."""
        return bounded(self.capacity)

    def to_dict(self) -> dict[str, Any]:
        """JSON values."""
        return {
            "policy": self.policy,
            "seed": self.seed,
            "capacity": self.capacity,
            "failing": None if math.isinf(self.failing) else self.failing,
            "trials": [list(t) for t in self.trials],
        }


def bounded(capacity: float) -> bool:
    """Whether a search that found `capacity` failed above it: one that still passes at
    `MAX_RATE` ends there, bounded by no trial (`UNBOUNDED`)."""
    return capacity < MAX_RATE


def _search(
    start: float, precision: float, target: float, k: int, known: Sequence[Trial]
) -> Search:
    """Yield the rates to try next; receive their attainments; return (passing, failing)."""
    passing = max((r for r, a in known if a >= target), default=0.0)
    failing = min((r for r, a in known if a < target and r > passing), default=math.inf)
    if not known:
        if (yield [start])[0] >= target:
            passing = start
        else:
            failing = start
    while passing > 0.0 and math.isinf(failing) and passing < MAX_RATE:
        rates = [passing * 2.0 ** (j + 1) for j in range(k)]
        for r, a in zip(rates, (yield rates), strict=True):
            if a < target:
                failing = r
                break
            passing = r
    while passing == 0.0 and failing > MIN_RATE:
        rates = [failing / 2.0 ** (j + 1) for j in range(k)]
        for r, a in zip(rates, (yield rates), strict=True):
            if a >= target:
                passing = r
                break
            failing = r
    while 0.0 < passing < failing < math.inf and failing / passing > 1.0 + precision:
        ratio = failing / passing
        rates = [passing * ratio ** ((j + 1) / (k + 1)) for j in range(k)]
        for r, a in zip(rates, (yield rates), strict=True):
            if a < target:
                failing = r
                break
            passing = r
    return passing, failing


def _check_search(start: float, precision: float) -> None:
    """A search's first rate within the rates a search explores, and a positive precision."""
    if not MIN_RATE <= _validate.positive("capacity search", "start", start) <= MAX_RATE:
        raise InvalidRecordError(
            "capacity search",
            "start",
            f"={start:g} must be between {MIN_RATE:g} and {MAX_RATE:g} req/s, the rates a search "
            "explores",
        )
    _validate.positive("capacity search", "precision", precision)


def capacities(
    bases: Sequence[RunSpec],
    start: float = 1.0,
    precision: float = PRECISION,
    target: float = SLO_TARGET,
    workers: int | None = None,
    known: Sequence[Sequence[Trial]] | None = None,
    on_done: Callable[[CapacityResult], None] | None = None,
    on_round: Callable[[list[tuple[str, float]]], None] | None = None,
    *,
    ray: str | None = None,
    on_trial: Callable[[RunSummary], None] | None = None,
) -> list[CapacityResult]:
    """One capacity search per spec (e.g. one per policy), all over one set of workers: the
    Ray cluster at `ray`, or `workers` local processes (`runs.workers`).

    `known[i]` are trials of `bases[i]` already run at full length (same seed and size).
    `on_round` is told the (policy, rate) trials of each round before they run; `on_trial`
    gets each trial's summary once it ran (its engine figures: timings).
    """
    _check_search(start, precision)
    prior = [list(t) for t in known] if known is not None else [[] for _ in bases]
    searches = [_search(start, precision, target, 1, p) for p in prior]
    trials: list[list[Trial]] = [list(p) for p in prior]
    specs = [_stopping_early(base, target) for base in bases]
    results: list[CapacityResult | None] = [None] * len(bases)
    pending: dict[int, list[float]] = {}

    def advance(i: int, attainments: list[float] | None) -> None:
        try:
            rates = next(searches[i]) if attainments is None else searches[i].send(attainments)
            pending[i] = rates
        except StopIteration as done:
            passing, failing = done.value
            found = CapacityResult(
                bases[i].label, passing, failing, tuple(trials[i]), bases[i].seed
            )
            results[i] = found
            if on_done is not None:
                on_done(found)

    with trial_runner(workers, ray, jobs=len(bases)) as runner:
        for i in range(len(bases)):
            advance(i, None)
        while pending:
            jobs = [(i, r) for i, rates in sorted(pending.items()) for r in rates]
            pending.clear()
            if on_round is not None:
                on_round([(bases[i].label, r) for i, r in jobs])
            todo = [specs[i].with_rate(r) for i, r in jobs]
            got = _attainments(jobs, runner.map(run, todo), trials, on_trial)
            for i, attainments in got.items():
                advance(i, attainments)
    return [r for r in results if r is not None]


def _attainments(
    jobs: list[tuple[int, float]],
    summaries: Iterable[RunSummary],
    trials: list[list[Trial]],
    on_trial: Callable[[RunSummary], None] | None,
) -> dict[int, list[float]]:
    """The attainment of each job's trial, by search: recorded in `trials` and told to
    `on_trial` as each summary arrives."""
    got: dict[int, list[float]] = {}
    for (i, r), summary in zip(jobs, summaries, strict=True):
        trials[i].append((r, summary.metrics.attainment))
        if on_trial is not None:
            on_trial(summary)
        got.setdefault(i, []).append(summary.metrics.attainment)
    return got


def search(
    attainment: Callable[[float], float],
    start: float = 1.0,
    precision: float = PRECISION,
    target: float = SLO_TARGET,
) -> tuple[float, float]:
    """(highest passing, lowest failing) rate of `capacities`' search, run here on a function
    of the rate (e.g. a bound's attainment): the same rates in the same order, so a function
    at least the simulated attainment at every rate never ends below the simulated capacity."""
    rates = _search(start, precision, target, 1, ())
    try:
        asked = next(rates)
        while True:
            asked = rates.send([attainment(r) for r in asked])
    except StopIteration as done:
        passing, failing = done.value
        return passing, failing


def _stopping_early(base: RunSpec, target: float) -> RunSpec:
    """`base`, stopping once more of its requests have missed than `target` attainment
    allows (the trial has then failed)."""
    allowed = base.workload.requests - math.ceil(target * base.workload.requests)
    return attrs.evolve(base, options=attrs.evolve(base.options, miss_budget=allowed))


def capacity_search(
    base: RunSpec,
    start: float = 1.0,
    precision: float = PRECISION,
    target: float = SLO_TARGET,
    workers: int | None = None,
    *,
    ray: str | None = None,
) -> CapacityResult:
    """The capacity of one spec (module docstring), its trials run as `capacities` runs them."""
    return capacities([base], start, precision, target, workers, ray=ray)[0]


@attrs.frozen(slots=True)
class CapacitySpread:
    """One policy's capacity over several seeds: the mean, the lowest and the highest."""

    policy: str
    capacities: tuple[float, ...]

    @property
    def bounded(self) -> bool:
        """Whether every seed's search failed above its capacity (`bounded`): only then are
        the mean and its spread figures to rank or divide."""
        return all(bounded(c) for c in self.capacities)

    @property
    def mean(self) -> float:
        """The mean capacity over the seeds."""
        return sum(self.capacities) / len(self.capacities)

    @property
    def low(self) -> float:
        """The lowest seed's capacity."""
        return min(self.capacities)

    @property
    def high(self) -> float:
        """The highest seed's capacity."""
        return max(self.capacities)


def spreads(results: Sequence[CapacityResult]) -> list[CapacitySpread]:
    """Each policy's capacities over its seeds, policies in the order they first appear."""
    by_policy: dict[str, list[float]] = {}
    for result in results:
        by_policy.setdefault(result.policy, []).append(result.capacity)
    return [CapacitySpread(policy, tuple(values)) for policy, values in by_policy.items()]
