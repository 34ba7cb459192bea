"""The requests a workload draws, as the fluid bound sees them: exact probabilities, in cells.

A named workload samples each request's lengths from quantile tables (`workloads.lengths`):
one uniform u gives the prompt (the prompt table read at u, rounded) and its decile, a second
uniform gives the output from that decile's table. Between two table levels the value is
linear in the uniform, so a rounded value k has probability (the length of the uniform's
interval that rounds to k) — the distribution is known exactly, with no sampling. Within a
decile prompt and output are independent; the sources of a mix come in its proportions, and
QoServe's tiers uniformly.

A population is a tuple of `Grid`s: prompt and output marginals, independent, with the SLO of
each output length. Its cells are (prompt segment, output segment) pairs: a segment is the
stretch between two table levels (or one request, for a trace file's `points`); the bound's
drops (the 1% that may miss) work cell by cell.
"""

from __future__ import annotations

import attrs
import numpy as np
from numpy.typing import NDArray

from slidingpolicy._arrays import float_read_only, read_only
from slidingpolicy.bound.cost import IterationCost
from slidingpolicy.bound.demand import COLUMNS, demand
from slidingpolicy.runs.specs import WorkloadSpec
from slidingpolicy.workloads import Poisson
from slidingpolicy.workloads.lengths import OUTPUT_BINS, LengthDistribution
from slidingpolicy.workloads.make import MIXES
from slidingpolicy.workloads.slos import TIERS, dataset_slo, tier_slos

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


def _int_read_only(values: object) -> IntArray:
    return read_only(np.array(values, dtype=np.int64))


@attrs.frozen(slots=True)
class Marginal:
    """Values with their probabilities, in segments: `starts[s]` is where segment s begins."""

    values: FloatArray = attrs.field(converter=float_read_only)
    probs: FloatArray = attrs.field(converter=float_read_only)
    starts: IntArray = attrs.field(converter=_int_read_only)

    @property
    def highest(self) -> FloatArray:
        """The largest value of each segment."""
        ends = np.append(self.starts[1:], self.values.size) - 1
        highest: FloatArray = self.values[ends]
        return highest


@attrs.frozen(slots=True)
class Grid:
    """Requests of probability `weight` whose prompt and output are independent, the output
    with its TTFT and TBT (one per output value)."""

    weight: float
    prompt: Marginal
    output: Marginal
    ttft: FloatArray = attrs.field(converter=float_read_only)
    tbt: FloatArray = attrs.field(converter=float_read_only)


@attrs.frozen(slots=True)
class Cells:
    """Per cell: its probability, the mean work of its requests (`demand.COLUMNS`) and the
    most work any one of them needs."""

    mass: FloatArray
    mean: FloatArray
    high: FloatArray


def rounded_uniform(low: float, high: float) -> tuple[FloatArray, FloatArray]:
    """The values of rint(low + (high − low)·U), U uniform on [0, 1), and their
    probabilities."""
    if high <= low:
        return np.array([float(round(low))]), np.array([1.0])
    ks = np.arange(np.rint(low), np.rint(high) + 1.0)
    width = np.minimum(ks + 0.5, high) - np.maximum(ks - 0.5, low)
    keep = width > 0
    return ks[keep], width[keep] / (high - low)


def quantile_marginal(table: tuple[int, ...], segments: range) -> Marginal:
    """The values a quantile table gives between its levels `segments`, each segment equally
    likely (levels equally spaced)."""
    values: list[FloatArray] = []
    probs: list[FloatArray] = []
    starts: list[int] = []
    for s in segments:
        v, p = rounded_uniform(float(table[s]), float(table[s + 1]))
        starts.append(sum(x.size for x in values))
        values.append(v)
        probs.append(p / len(segments))
    return Marginal(np.concatenate(values), np.concatenate(probs), np.array(starts))


def distribution_grids(
    distribution: LengthDistribution, weight: float, slo_scale: float, tiers: bool
) -> list[Grid]:
    """The grids of one length distribution: one per prompt decile (and tier)."""
    per_bin = (len(distribution.prompt_quantiles) - 1) // OUTPUT_BINS
    grids = []
    for d in range(OUTPUT_BINS):
        prompt = quantile_marginal(
            distribution.prompt_quantiles, range(d * per_bin, (d + 1) * per_bin)
        )
        levels = distribution.output_quantiles[d]
        output = quantile_marginal(levels, range(len(levels) - 1))
        outputs = output.values.astype(np.int64)
        share = weight / OUTPUT_BINS
        if not tiers:
            slo = dataset_slo(distribution.name, slo_scale)
            ones = np.ones(outputs.size)
            grids.append(Grid(share, prompt, output, slo.ttft * ones, slo.tbt * ones))
            continue
        for tier in range(TIERS):
            ttft, tbt = tier_slos(np.full(outputs.size, tier), outputs, slo_scale)
            grids.append(Grid(share / TIERS, prompt, output, ttft, tbt))
    return grids


def point_grids(
    prompt: IntArray, output: IntArray, ttft: FloatArray, tbt: FloatArray
) -> list[Grid]:
    """Each request of a trace its own grid, all equally likely."""
    weight = 1.0 / prompt.size
    one = np.ones(1)
    return [
        Grid(weight, Marginal(np.array([p]), one, [0]), Marginal(np.array([o]), one, [0]), [f], [b])
        for p, o, f, b in zip(
            prompt.tolist(), output.tolist(), ttft.tolist(), tbt.tolist(), strict=True
        )
    ]


def population(spec: WorkloadSpec) -> tuple[Grid, ...]:
    """The population a workload spec draws from: a named workload's exact distribution, or
    a trace file's requests (first `spec.requests`)."""
    if spec.trace is None:
        parts = MIXES[spec.name]
        total = sum(w for _, w in parts)
        return tuple(
            grid
            for distribution, w in parts
            for grid in distribution_grids(distribution, w / total, spec.slo_scale, spec.slo_tiers)
        )
    columns = spec.build(Poisson(1.0), 0).columns()
    return tuple(point_grids(columns.prompt, columns.output, columns.ttft, columns.tbt))


def cells(grids: tuple[Grid, ...], cost: IterationCost) -> Cells:
    """The cells of every grid (module docstring), in grid order."""
    mass, mean, high = [], [], []
    for g in grids:
        o = g.output
        for start, stop, top in zip(
            g.prompt.starts.tolist(),
            [*g.prompt.starts[1:].tolist(), g.prompt.values.size],
            g.prompt.highest.tolist(),
            strict=True,
        ):
            p = g.prompt.values[start:stop]
            weights = np.outer(g.prompt.probs[start:stop], o.probs) * g.weight
            work = demand(cost, p[:, None], o.values[None, :], g.ttft[None, :])
            by_output = np.add.reduceat(weights, o.starts, axis=1).sum(axis=0)
            weighted = np.add.reduceat((work * weights[..., None]).sum(axis=0), o.starts, axis=0)
            mass.append(by_output)
            mean.append(weighted / np.maximum(by_output, 1e-300)[:, None])
            worst = demand(cost, np.full(o.values.size, top), o.values, g.ttft)
            high.append(np.maximum.reduceat(worst, o.starts, axis=0))
    return Cells(np.concatenate(mass), np.concatenate(mean), np.concatenate(high))


def windows(grids: tuple[Grid, ...]) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Every (tokens o, window L_ttft + (o − 1)·L_tbt) pair a request can have, with its
    probability: what the pacing floor reads."""
    tokens = np.concatenate([g.output.values for g in grids])
    window = np.concatenate([g.ttft + (g.output.values - 1.0) * g.tbt for g in grids])
    mass = np.concatenate([g.weight * g.output.probs for g in grids])
    return tokens, window, mass


def max_context(grids: tuple[Grid, ...]) -> float:
    """The longest context any decode reads: prompt + output − 1."""
    return max(float(g.prompt.values.max() + g.output.values.max() - 1.0) for g in grids)


__all__ = ["COLUMNS", "Cells", "Grid", "Marginal", "cells", "max_context", "population", "windows"]
