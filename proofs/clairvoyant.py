"""A clairvoyant MILP for tiny instances: the most requests that meet every eq. 1 deadline.

The instance is known in full (arrivals, prompt and output lengths) and the latency of an
iteration is linear in its tokens, T = b0 + b1·tokens (0 for an empty one). A schedule is
a sequence of at most K iterations, each starting at or after the previous one ends and
after the arrival of every request it serves; a request's prefill may be split over
iterations, its first token comes at the end of the iteration that completes it, and each
later token takes one decode token in a later iteration. The MILP maximizes the number of
requests whose every token k meets d_k = a + L_ttft + (k − 1)·L_tbt.

It bounds every policy: a policy's run, cut down to the requests it served on time, is a
feasible point (fewer tokens only shorten iterations; start times are kept), provided K is
at least the number of iterations that run a served request — `upper_bound` checks it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np

from proofs.milp import HIGHS_OPTIONS, OracleError, cp
from slidingpolicy.pricing.model import LatencyPredictor, LinearModel

TOLERANCE = 1e-9
"""Seconds of slack when replaying a schedule against deadlines (MILP times are floats)."""


@attrs.frozen(slots=True)
class Job:
    """One request, known in full: arrival, prompt and output lengths, SLOs."""

    id: str
    arrival: float
    prompt: int
    output: int
    ttft: float
    tbt: float

    def deadline(self, token: int) -> float:
        """Deadline of output token `token` ≥ 1 (eq. 1)."""
        return self.arrival + self.ttft + (token - 1) * self.tbt


@attrs.frozen(slots=True)
class Instance:
    """Jobs, the linear latency model T = b0 + b1·tokens, and the iteration bound K."""

    name: str
    jobs: tuple[Job, ...]
    b0: float
    b1: float
    iterations: int

    def latency(self, tokens: int) -> float:
        """Ground-truth latency of an iteration with `tokens` tokens."""
        return self.b0 + self.b1 * tokens if tokens > 0 else 0.0

    def predictor(self) -> LatencyPredictor:
        """The same model as a LatencyPredictor: b0 + b1·(x4 + x6) in every scenario
        (x4 counts 1-token entries, x6 sums longer chunks: together, all tokens)."""
        model = LinearModel(self.b0, (0.0, 0.0, 0.0, self.b1, 0.0, self.b1, 0.0))
        return LatencyPredictor(model, model, model, fallback=model, source="linear")

    @property
    def horizon(self) -> float:
        """The last deadline of any token."""
        return max(j.deadline(j.output) for j in self.jobs)


@attrs.frozen(slots=True)
class Schedule:
    """Iterations in order: each a start time and (job id, tokens) allocations."""

    starts: tuple[float, ...]
    batches: tuple[tuple[tuple[str, int], ...], ...]

    def restricted(self, keep: frozenset[str]) -> Schedule:
        """Only the allocations of `keep`, empty iterations dropped, start times kept."""
        starts, batches = [], []
        for start, batch in zip(self.starts, self.batches, strict=True):
            kept = tuple((i, c) for i, c in batch if i in keep)
            if kept:
                starts.append(start)
                batches.append(kept)
        return Schedule(tuple(starts), tuple(batches))


def served(instance: Instance, schedule: Schedule) -> frozenset[str]:
    """Replay a schedule: the jobs all of whose tokens meet their deadlines.

    Raises ValueError if the schedule is not a valid one (overlap, early start, a decode
    before the prefill completes, more than the prompt, more than one decode token).
    """
    jobs = {j.id: j for j in instance.jobs}
    prefilled = dict.fromkeys(jobs, 0)
    produced: dict[str, list[float]] = {i: [] for i in jobs}
    end = 0.0
    for start, batch in zip(schedule.starts, schedule.batches, strict=True):
        if start < end - TOLERANCE:
            raise ValueError(f"iteration at {start} starts before the previous ends at {end}")
        end = start + instance.latency(sum(c for _, c in batch))
        for i, c in batch:
            job = jobs[i]
            if start < job.arrival - TOLERANCE:
                raise ValueError(f"{i} runs at {start} before it arrives at {job.arrival}")
            if prefilled[i] < job.prompt:
                prefilled[i] += c
                if prefilled[i] > job.prompt:
                    raise ValueError(f"{i} prefills more than its prompt")
                if prefilled[i] == job.prompt:
                    produced[i].append(end)
            elif c != 1:
                raise ValueError(f"{i} decodes {c} tokens in one iteration")
            else:
                produced[i].append(end)
    return frozenset(
        i
        for i, job in jobs.items()
        if len(produced[i]) >= job.output
        and all(
            t <= job.deadline(k + 1) + TOLERANCE for k, t in enumerate(produced[i][: job.output])
        )
    )


def solve(instance: Instance, fixed: Schedule | None = None) -> tuple[int, Schedule]:
    """The clairvoyant optimum and a schedule attaining it; with `fixed`, the MILP point of
    that schedule instead (its allocations and the set it serves are imposed), which checks
    that the schedule is feasible for the MILP. Raises OracleError when infeasible."""
    jobs, n, k_max = instance.jobs, len(instance.jobs), instance.iterations
    total = float(sum(j.prompt + j.output for j in jobs))
    horizon = instance.horizon
    big = 2.0 * horizon + instance.b0 + instance.b1 * total + 1.0
    x = cp.Variable((n, k_max), integer=True)  # prefill tokens
    f = cp.Variable((n, k_max), boolean=True)  # prefill completes
    d = cp.Variable((n, k_max), boolean=True)  # one decode token
    g = cp.Variable((n, k_max), boolean=True)  # allowed to prefill (arrived by t_k)
    s = cp.Variable(n, boolean=True)  # served on time
    act = cp.Variable(k_max, boolean=True)
    t = cp.Variable(k_max, nonneg=True)
    tokens = cp.sum(x, axis=0) + cp.sum(d, axis=0)
    e = t + instance.b0 * act + instance.b1 * tokens
    cons = [x >= 0, tokens <= total * act, e <= horizon, t[1:] >= e[:-1]]
    upper = np.triu(np.ones((k_max, k_max)))  # column k sums entries 0..k
    strict = np.triu(np.ones((k_max, k_max)), 1)  # column k sums entries 0..k−1
    for i, job in enumerate(jobs):
        cons += [
            cp.sum(x[i]) == job.prompt * s[i],
            x[i] <= job.prompt * g[i],
            t >= job.arrival * g[i],
            cp.sum(f[i]) == s[i],
            x[i] @ upper >= job.prompt * (f[i] @ upper),
            d[i] <= f[i] @ strict,
            cp.sum(d[i]) == (job.output - 1) * s[i],
            e <= job.deadline(1) + big * (1 - f[i]),
            e <= job.deadline(1) + job.tbt * (d[i] @ upper) + big * (1 - d[i]),
        ]
    if fixed is not None:
        cons += _impose(instance, fixed, x, d, s)
    problem = cp.Problem(cp.Maximize(cp.sum(s)), cons)
    problem.solve(solver=cp.HIGHS, **HIGHS_OPTIONS)
    if problem.status != cp.OPTIMAL:
        raise OracleError(f"clairvoyant MILP {instance.name}: {problem.status}")
    return round(float(problem.value)), _schedule(instance, x.value, d.value, t.value)


def _impose(instance: Instance, fixed: Schedule, x: Any, d: Any, s: Any) -> list[object]:
    index = {j.id: i for i, j in enumerate(instance.jobs)}
    n, k_max = len(instance.jobs), instance.iterations
    if len(fixed.batches) > k_max:
        raise OracleError(f"schedule has {len(fixed.batches)} iterations > K = {k_max}")
    xs, ds = np.zeros((n, k_max)), np.zeros((n, k_max))
    prefilled = dict.fromkeys(index, 0)
    for k, batch in enumerate(fixed.batches):
        for i, c in batch:
            job = instance.jobs[index[i]]
            if prefilled[i] < job.prompt:
                xs[index[i], k] = c
                prefilled[i] += c
            else:
                ds[index[i], k] = 1
    on_time = served(instance, fixed)
    chosen = np.array([1.0 if j.id in on_time else 0.0 for j in instance.jobs])
    return [x == xs, d == ds, s == chosen]


def _schedule(instance: Instance, xv: object, dv: object, tv: object) -> Schedule:
    xs = np.rint(np.asarray(xv)).astype(int)
    ds = np.rint(np.asarray(dv)).astype(int)
    times = np.asarray(tv, dtype=np.float64)
    starts, batches = [], []
    for k in range(instance.iterations):
        batch = tuple(
            (job.id, int(xs[i, k] + ds[i, k]))
            for i, job in enumerate(instance.jobs)
            if xs[i, k] + ds[i, k] > 0
        )
        if batch:
            starts.append(float(times[k]))
            batches.append(batch)
    return Schedule(tuple(starts), tuple(batches))


def instance_of(
    name: str, jobs: Sequence[Job], b0: float, b1: float, iterations: int | None = None
) -> Instance:
    """An instance with K = Σ outputs + number of jobs unless given."""
    k = iterations if iterations is not None else sum(j.output for j in jobs) + len(jobs)
    return Instance(name, tuple(jobs), b0, b1, k)
