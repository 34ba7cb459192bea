"""The fluid bound: a linear program over iteration types, the highest Poisson rate at which at
least 99% of a workload's requests can meet every eq. 1 deadline, in the long run.

Per second of a long run at rate λ (proofs/bound.md states and proves it):

- iteration types: x_j iterations/s of T_j tokens and w_l of R_l entries, the breakpoints of
  the convex envelopes (`cost`); a real iteration is a mix of the two types around it, at
  exactly its envelope cost;
- time: Σ x_j·G(T_j) + Σ w_l·H(R_l) + prefill attention + decode attention ≤ 1 (iterations
  run one at a time), the decode attention at least its FLOP time and its memory time;
- work is conserved: tokens Σ x_j·T_j and entries Σ w_l·R_l cover the requests' (`demand`),
  Σ w_l·R_l ≤ Σ x_j·T_j (an entry takes a token), as many token types as entry types;
- pacing: at least `pacing.iteration_rate` iterations per second;
- KV (Little's law): the decode contexts y_j held through iterations of type j,
  Σ G(T_j)·y_j ≤ KV capacity, y_j ≤ x_j · min(capacity, longest context · T_{j+1});
- the 1% that may miss: Z_c requests/s of cell c dropped (Z_c ≤ λ·mass_c, Σ Z_c ≤ 1%·λ),
  each removing at most its cell's largest work from every column.

The pacing floor rises with λ, so the program is solved for a floor and the floor updated from
its answer: an answer above the true bound gives a floor below the true one and an answer
above it again, one below gives one below; the iterates alternate around the bound, and the
upper one is reported (a bound) when they agree within `TOLERANCE`.
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np
from numpy.typing import NDArray
from scipy import optimize, sparse

from slidingpolicy.bound.cost import IterationCost
from slidingpolicy.bound.demand import COLUMNS
from slidingpolicy.bound.pacing import iteration_rate
from slidingpolicy.bound.population import Cells, Grid, cells, max_context, windows
from slidingpolicy.errors import SlidingPolicyError
from slidingpolicy.metrics import SLO_TARGET

FloatArray = NDArray[np.float64]

TOLERANCE = 1e-4
"""Relative gap between the upper and lower iterates at which the answer is taken."""

MAX_ROUNDS = 30

CONSTRAINTS = {
    "time": "GPU time: iterations run one at a time (≤ 1 s per second)",
    "pacing": "pacing: the iterations the tokens' deadlines force (eq. 1)",
    "kv": "KV cache: Little's law, and what one iteration's decodes can hold",
}
"""The program's constraints, by name, as the output explains them."""


RELIEF = 1e-3
"""A constraint binds when the bound without it is higher by more than this share."""


class BoundError(SlidingPolicyError):
    """The linear program failed (solver status); never a verdict on a policy."""


@attrs.frozen(slots=True)
class IterationType:
    """An iteration type the optimum runs: its tokens (or entries), rate and cost."""

    size: float
    rate: float
    seconds: float


@attrs.frozen(slots=True)
class FluidBound:
    """The bound (req/s), what binds it, and the iterations at the optimum."""

    bound: float
    unpaced: float
    pacing: float
    binding: tuple[str, ...]
    token_types: tuple[IterationType, ...]
    entry_types: tuple[IterationType, ...]
    time_split: tuple[tuple[str, float], ...]
    cost: str
    unlimited_kv: float = float("nan")
    """The bound with an unlimited KV cache."""

    @property
    def iterations(self) -> float:
        """Iterations per second at the optimum."""
        return sum(t.rate for t in self.token_types)

    @property
    def mean_tokens(self) -> float:
        """Tokens per iteration at the optimum."""
        return sum(t.rate * t.size for t in self.token_types) / max(self.iterations, 1e-300)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON values."""
        return {
            "bound": self.bound,
            "binding": [{"constraint": n, "meaning": CONSTRAINTS[n]} for n in self.binding],
            "unpaced": self.unpaced,
            "unlimited_kv": self.unlimited_kv,
            "pacing_iterations_per_s": self.pacing,
            "iterations_per_s": self.iterations,
            "mean_tokens": self.mean_tokens,
            "token_types": [attrs.asdict(t) for t in self.token_types],
            "entry_types": [attrs.asdict(t) for t in self.entry_types],
            "time_split": dict(self.time_split),
            "cost": self.cost,
        }


@attrs.frozen(slots=True)
class Program:
    """The linear program's data: the cost, the cells and the pacing pairs."""

    cost: IterationCost
    cells: Cells
    windows: tuple[FloatArray, FloatArray, FloatArray]
    longest_context: float
    miss: float
    kv: bool = True
    """Whether the KV rows are in (off: what the bound would be with an unlimited cache)."""


def fluid_bound(
    grids: tuple[Grid, ...], cost: IterationCost, target: float = SLO_TARGET
) -> FluidBound:
    """The fluid bound (module docstring) of the population `grids` on `cost`, at least
    `target` of the requests attaining."""
    program = Program(cost, cells(grids, cost), windows(grids), max_context(grids), 1.0 - target)
    upper, floor = _solve(program, 0.0), 0.0
    unpaced = upper.value
    for _ in range(MAX_ROUNDS):
        lower = _solve(program, iteration_rate(*program.windows, upper.value, program.miss))
        if upper.value - lower.value <= TOLERANCE * upper.value:
            unlimited = _solve(attrs.evolve(program, kv=False), floor).value
            floor = max(floor, iteration_rate(*program.windows, lower.value, program.miss))
            return _report(program, upper, (unpaced, unlimited), floor)
        floor = iteration_rate(*program.windows, lower.value, program.miss)
        upper = _solve(program, floor)
    raise BoundError(f"the pacing floor did not settle in {MAX_ROUNDS} rounds")


@attrs.frozen(slots=True)
class Solution:
    """One solve: λ and the variables per request (x_j/λ, …)."""

    value: float
    x: FloatArray


@attrs.frozen(slots=True)
class Layout:
    """Where each variable sits, all per request of the workload (the program is solved for
    θ = 1/λ, the GPU seconds a request costs, so that the misses are plain bounds): θ, x_j
    (token types), w_l (entry types), y_j (contexts), v (decode attention), z_c (the share of
    requests that miss, by cell)."""

    types: int
    entries: int
    cells: int

    theta = 0
    x = 1

    @property
    def w(self) -> int:
        """The first entry type."""
        return self.x + self.types

    @property
    def y(self) -> int:
        """The first context."""
        return self.w + self.entries

    @property
    def v(self) -> int:
        """The decode attention."""
        return self.y + self.types

    @property
    def z(self) -> int:
        """The first cell's misses."""
        return self.v + 1

    @property
    def size(self) -> int:
        """How many variables."""
        return self.z + self.cells


class Rows:
    """Named inequality rows a·vars ≤ b, built one at a time (sparse)."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self.names: list[str] = []
        self.entries: list[tuple[int, int, float]] = []
        self.rhs: list[float] = []

    def add(
        self,
        name: str,
        terms: list[tuple[int, float]],
        rhs: float = 0.0,
        missed: FloatArray | None = None,
    ) -> None:
        """One row; `missed`: each cell's coefficient (its largest work, for a work row)."""
        r = len(self.names)
        self.entries += [(r, col, val) for col, val in terms]
        if missed is not None:
            z = self.layout.z
            self.entries += [(r, z + c, val) for c, val in enumerate(missed.tolist())]
        self.names.append(name)
        self.rhs.append(rhs)

    def matrix(self) -> tuple[sparse.csr_array, FloatArray]:
        """The rows as a sparse matrix and their right-hand sides."""
        r, c, v = zip(*self.entries, strict=True)
        shape = (len(self.names), self.layout.size)
        return sparse.csr_array((v, (r, c)), shape=shape), np.array(self.rhs)


def _solve(program: Program, floor: float) -> Solution:
    """The program at this pacing floor: minimize θ."""
    at = Layout(
        program.cost.tokens.points.size, program.cost.entries.points.size, program.cells.mass.size
    )
    matrix, rhs = _rows(program, at, floor)
    objective = np.zeros(at.size)
    objective[at.theta] = 1.0
    xs, ws = range(at.x, at.x + at.types), range(at.w, at.w + at.entries)
    equal = np.zeros((1, at.size))
    equal[0, list(xs)], equal[0, list(ws)] = 1.0, -1.0
    bounds = [(0.0, None)] * at.z + [(0.0, m) for m in program.cells.mass.tolist()]
    result = optimize.linprog(
        objective, matrix, rhs, equal, np.zeros(1), bounds=bounds, method="highs"
    )
    if result.status != 0 or result.fun <= 0.0:
        raise BoundError(f"the fluid bound's linear program: {result.message}")
    return Solution(1.0 / float(result.fun), np.asarray(result.x))


def _rows(program: Program, at: Layout, floor: float) -> tuple[sparse.csr_array, FloatArray]:
    """The inequality rows (module docstring), per request."""
    cost, cell = program.cost, program.cells
    mean = dict(zip(COLUMNS, (cell.mass @ cell.mean).tolist(), strict=True))
    high = dict(zip(COLUMNS, (-cell.high).T, strict=True))
    xs = list(range(at.x, at.x + at.types))
    ws = list(range(at.w, at.w + at.entries))
    ys = list(range(at.y, at.y + at.types))
    tokens, token_s = cost.tokens.points.tolist(), cost.tokens.values.tolist()
    entries, entry_s = cost.entries.points.tolist(), cost.entries.values.tolist()
    rows = Rows(at)
    time = [
        (at.theta, -1.0),
        (at.v, 1.0),
        *zip(xs, token_s, strict=True),
        *zip(ws, entry_s, strict=True),
    ]
    rows.add("time", time, -mean["prefill"], high["prefill"])
    for name in ("decode_compute", "decode_memory"):
        rows.add(name, [(at.v, -1.0)], -mean[name], high[name])
    rows.add(
        "tokens",
        [(j, -t) for j, t in zip(xs, tokens, strict=True)],
        -mean["tokens"],
        high["tokens"],
    )
    rows.add(
        "entries",
        [(k, -r) for k, r in zip(ws, entries, strict=True)],
        -mean["entries"],
        high["entries"],
    )
    rows.add(
        "entry_tokens",
        [*zip(ws, entries, strict=True), *((j, -t) for j, t in zip(xs, tokens, strict=True))],
    )
    rows.add("pacing", [(at.theta, floor), *((j, -1.0) for j in xs)])
    rows.add("context", [(y, -1.0) for y in ys], -mean["context"], high["context"])
    capacity = np.inf
    if program.kv and cost.kv_capacity is not None:
        capacity = float(cost.kv_capacity)
    reach = np.append(cost.tokens.points[1:], np.inf) * program.longest_context
    for j, y, held in zip(xs, ys, np.minimum(capacity, reach).tolist(), strict=True):
        if np.isfinite(held):
            rows.add("context_per_iteration", [(y, 1.0), (j, -held)])
    if np.isfinite(capacity):
        rows.add("kv", [(at.theta, -capacity), *zip(ys, token_s, strict=True)])
    rows.add("misses", [], program.miss, np.ones(at.cells))
    matrix, rhs = rows.matrix()
    scale = 1.0 / abs(matrix).max(axis=1).toarray().ravel()
    return sparse.diags_array(scale) @ matrix, rhs * scale


def _report(
    program: Program, solution: Solution, relaxed: tuple[float, float], floor: float
) -> FluidBound:
    """The answer, the constraints that bind it — GPU time always; pacing and the KV cache
    where dropping them (`relaxed`: the answers without each) raises the bound by more than
    `RELIEF` — and the iterations per second at the optimum (the per-request solution times
    λ)."""
    cost = program.cost
    at = Layout(cost.tokens.points.size, cost.entries.points.size, program.cells.mass.size)
    lam = solution.value
    xs = lam * solution.x[at.x : at.x + at.types]
    ws = lam * solution.x[at.w : at.w + at.entries]
    token_types = _types(cost.tokens.points, xs, cost.tokens.values)
    entry_types = _types(cost.entries.points, ws, cost.entries.values)
    token_seconds = float(xs @ cost.tokens.values)
    entry_seconds = float(ws @ cost.entries.values)
    attention = lam * float(solution.x[at.v])
    split = (
        ("tokens", token_seconds),
        ("entries", entry_seconds),
        ("decode attention", attention),
        ("prefill attention", 1.0 - token_seconds - entry_seconds - attention),
    )
    unpaced, unlimited = relaxed
    relieved = (("pacing", unpaced), ("kv", unlimited))
    binding = ("time", *(name for name, without in relieved if without > lam * (1.0 + RELIEF)))
    return FluidBound(
        lam, unpaced, floor, binding, token_types, entry_types, split, cost.name, unlimited
    )


def _types(sizes: FloatArray, rates: FloatArray, seconds: FloatArray) -> tuple[IterationType, ...]:
    """The types run at a positive rate."""
    return tuple(
        IterationType(size, rate, s)
        for size, rate, s in zip(sizes.tolist(), rates.tolist(), seconds.tolist(), strict=True)
        if rate > 1e-12
    )
