"""The entry points: a named synthetic workload, or one loaded from a trace file.

Named workloads sample lengths from the embedded distributions: ``sharegpt``, ``arxiv``, and
the mixes ``mixed-v1`` (ShareGPT:arXiv = 3:1 by request count) and ``mixed-v2`` (5:1); and
``cpu-mixed``, sized for a CPU engine (`workloads.uniform`): short chat and document
requests 7:3, with their own SLOs (`workloads.slos`). A mix
has exactly those proportions (largest remainder), in a seeded random order. The seed feeds
independent streams for lengths, order, arrivals and SLO tiers, so that changing the arrival
process leaves the lengths unchanged.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from slidingpolicy._paths import StrPath
from slidingpolicy.errors import InvalidRecordError, UnknownNameError
from slidingpolicy.workloads.arrivals import ArrivalProcess, TraceTimes, arrival_times
from slidingpolicy.workloads.distributions import ARXIV, SHAREGPT
from slidingpolicy.workloads.lengths import LengthDistribution
from slidingpolicy.workloads.records import RequestSpec, Workload
from slidingpolicy.workloads.slos import check_scale, dataset_slo, tiered_slos
from slidingpolicy.workloads.traces import Trace, load_trace
from slidingpolicy.workloads.uniform import CHAT, DOCUMENTS

MIXES: dict[str, tuple[tuple[LengthDistribution, int], ...]] = {
    "sharegpt": ((SHAREGPT, 1),),
    "arxiv": ((ARXIV, 1),),
    "mixed-v1": ((SHAREGPT, 3), (ARXIV, 1)),
    "mixed-v2": ((SHAREGPT, 5), (ARXIV, 1)),
    "cpu-mixed": ((CHAT, 7), (DOCUMENTS, 3)),
}


def workload_names() -> tuple[str, ...]:
    """The names `make_workload` knows."""
    return tuple(MIXES)


def sources_of(name: str) -> tuple[str, ...]:
    """The data sets a named workload draws from (their SLOs apply to its requests)."""
    if name not in MIXES:
        raise UnknownNameError("workload", name, workload_names())
    return tuple(distribution.name for distribution, _ in MIXES[name])


def _check_count(num_requests: int) -> None:
    if isinstance(num_requests, bool) or not isinstance(num_requests, int) or num_requests < 1:
        raise InvalidRecordError("workload", "num_requests", f"={num_requests!r} must be >= 1")


def mix_counts(weights: tuple[int, ...], n: int) -> tuple[int, ...]:
    """Split `n` in proportion to `weights` exactly, remainders to the largest fractions."""
    total = sum(weights)
    counts = [n * w // total for w in weights]
    by_fraction = sorted(range(len(weights)), key=lambda i: (-(n * weights[i] % total), i))
    for i in by_fraction[: n - sum(counts)]:
        counts[i] += 1
    return tuple(counts)


def make_workload(
    name: str,
    num_requests: int,
    arrivals: ArrivalProcess,
    seed: int,
    slo_scale: float = 1.0,
    slo_tiers: bool = False,
) -> Workload:
    """`num_requests` requests of the named workload, arriving by `arrivals`, from `seed`."""
    if name not in MIXES:
        raise UnknownNameError("workload", name, workload_names())
    _check_count(num_requests)
    check_scale(slo_scale)
    if isinstance(arrivals, TraceTimes):
        raise InvalidRecordError(f"workload {name!r}", "arrivals", "a synthetic one has no trace")
    lengths_rng, order_rng, arrivals_rng, tiers_rng = (
        np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(4)
    )
    parts = MIXES[name]
    counts = mix_counts(tuple(weight for _, weight in parts), num_requests)
    prompts, outputs, sources = [], [], []
    for (distribution, _), count in zip(parts, counts, strict=True):
        prompt, output = distribution.sample(count, lengths_rng)
        prompts.append(prompt)
        outputs.append(output)
        sources += [distribution.name] * count
    order = order_rng.permutation(num_requests)
    times = arrival_times(arrivals, num_requests, arrivals_rng)
    return _assemble(
        name,
        times,
        np.concatenate(prompts)[order],
        np.concatenate(outputs)[order],
        tuple(sources[i] for i in order),
        tiers_rng,
        slo_scale,
        slo_tiers,
    )


def load_workload(
    path: StrPath,
    arrivals: ArrivalProcess | None = None,
    num_requests: int | None = None,
    seed: int = 0,
    slo_source: str = "sharegpt",
    slo_scale: float = 1.0,
    slo_tiers: bool = False,
) -> Workload:
    """The first `num_requests` (default all) requests of a trace file (`trace_workload`)."""
    return trace_workload(
        load_trace(path), arrivals, num_requests, seed, slo_source, slo_scale, slo_tiers
    )


def trace_workload(
    trace: Trace,
    arrivals: ArrivalProcess | None = None,
    num_requests: int | None = None,
    seed: int = 0,
    slo_source: str = "sharegpt",
    slo_scale: float = 1.0,
    slo_tiers: bool = False,
) -> Workload:
    """The first `num_requests` (default all) requests of a trace already read.

    Arrivals default to the trace's own times (an error if it has none); `TraceTimes(rate)`
    rescales them (`arrival_times`). SLOs are the defaults of the data set `slo_source`, or
    QoServe's tiers.
    """
    path = Path(trace.path)
    n = len(trace) if num_requests is None else num_requests
    _check_count(n)
    if n > len(trace):
        raise InvalidRecordError(f"trace {path.name}", "num_requests", f"={n} > {len(trace)}")
    check_scale(slo_scale)
    dataset_slo(slo_source)
    arrivals_rng, tiers_rng = (
        np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(2)
    )
    if arrivals is None and trace.arrivals is None:
        raise InvalidRecordError(
            f"trace {path.name}", "arrivals", "has no arrival column; pass an arrival process"
        )
    process = TraceTimes() if arrivals is None else arrivals
    times = arrival_times(process, n, arrivals_rng, trace.arrivals)
    return _assemble(
        path.stem,
        times,
        trace.prompt_tokens[:n],
        trace.output_tokens[:n],
        (slo_source,) * n,
        tiers_rng,
        slo_scale,
        slo_tiers,
    )


def trace_draw(
    trace: Trace,
    num_requests: int,
    arrivals: ArrivalProcess,
    seed: int,
    slo_source: str = "sharegpt",
    slo_scale: float = 1.0,
    slo_tiers: bool = False,
) -> Workload:
    """`num_requests` requests whose lengths are drawn from the trace's (uniformly, with
    replacement), arriving by `arrivals`: more of the trace's population, as a steady-state
    trial's warm-up and tail take it (`workloads.steady_state`)."""
    _check_count(num_requests)
    if isinstance(arrivals, TraceTimes):
        raise InvalidRecordError(f"trace {Path(trace.path).name}", "arrivals", "must be a rate")
    picks_rng, arrivals_rng, tiers_rng = (
        np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(3)
    )
    picks = picks_rng.integers(0, len(trace), num_requests)
    return _assemble(
        Path(trace.path).stem,
        arrival_times(arrivals, num_requests, arrivals_rng),
        trace.prompt_tokens[picks],
        trace.output_tokens[picks],
        (slo_source,) * num_requests,
        tiers_rng,
        slo_scale,
        slo_tiers,
    )


def _assemble(
    name: str,
    times: NDArray[np.float64],
    prompts: NDArray[np.int64],
    outputs: NDArray[np.int64],
    sources: tuple[str, ...],
    tiers_rng: np.random.Generator,
    slo_scale: float,
    slo_tiers: bool,
) -> Workload:
    """Requests r0, r1, ... in arrival order, with their SLOs."""
    tiers: list[int | None] = [None] * len(sources)
    if slo_tiers:
        drawn, ttft, tbt = tiered_slos(outputs, tiers_rng, slo_scale)
        tiers = list(drawn.tolist())
    else:
        slos = {source: dataset_slo(source, slo_scale) for source in set(sources)}
        ttft = np.array([slos[s].ttft for s in sources])
        tbt = np.array([slos[s].tbt for s in sources])
    requests = tuple(
        RequestSpec(f"r{i}", t, p, o, f, b, s, tier)
        for i, (t, p, o, f, b, s, tier) in enumerate(
            zip(
                times.tolist(),
                prompts.tolist(),
                outputs.tolist(),
                ttft.tolist(),
                tbt.tolist(),
                sources,
                tiers,
                strict=True,
            )
        )
    )
    return Workload(name, requests)
