"""The experiments of the report, each a function from the config to plain JSON rows.

Every row is what a seed determines (no clock), except `decision_cost`'s, which are timings
of this machine and go to `timings.json`. Trials run on `workers` local processes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any

import attrs
import numpy as np

from slidingpolicy.engine.simulator import simulate
from slidingpolicy.policies import by_name
from slidingpolicy.predictors.locations import PACKAGED, profile_key
from slidingpolicy.predictors.profiling import profile
from slidingpolicy.pricing import evaluate, fit_predictor
from slidingpolicy.reproduce.presets import (
    LOAD_POLICIES,
    LOADS,
    OUR_ABLATION,
    PAPER_ABLATION,
    POLICIES,
    ROBUSTNESS_POLICIES,
    ROBUSTNESS_PREDICTORS,
    WINDOW_POLICIES,
    WINDOWS,
    ReproConfig,
    Setting,
)
from slidingpolicy.reproduce.timing import timed
from slidingpolicy.runs.capacity_search import capacities
from slidingpolicy.runs.specs import HardwareSpec, RunSpec, WorkloadSpec, predictor_of, run_many
from slidingpolicy.runs.workers import trial_runner
from slidingpolicy.workloads import Burst

Row = dict[str, Any]
Tick = Callable[[int], None]
Bar = Callable[[str, int], AbstractContextManager[Tick]]
"""A progress bar: `bar(label, total)` gives a context whose value advances it by n."""

UNIT_POLICY = "slidingserve"
"""Loads of Fig. 5 and 6 are multiples of this policy's capacity (the paper's "2× goodput")."""

PREDICTOR_HARDWARE = (
    HardwareSpec("rtx3090", "qwen2.5-7b", 1),
    HardwareSpec("rtx3090", "qwen2.5-7b", 2),
    HardwareSpec("rtx3090-quantized", "qwen2.5-7b", 2),
    HardwareSpec("rtx3090", "llama3-8b", 2),
    HardwareSpec("a100-80g", "llama3-8b", 1),
    HardwareSpec("a100-80g-quantized", "llama3-8b", 1),
    HardwareSpec("a100-80g-measured", "llama3-8b", 1),
    HardwareSpec("h100", "llama3-8b", 1),
    HardwareSpec("h100-quantized", "llama3-8b", 1),
)
"""Table 5's hardware: the paper's RTX 3090 at TP1 and TP2, then every other model we have."""

PREDICTOR_SEED = 7
"""The profiling seed of Table 5 (not the packaged predictors' seed: held-out is fresh)."""


def window_label(policy: str, window: int) -> str:
    """`policy` with its SlidingChunker window set (window 2 is the default label)."""
    return policy if window == 2 else f"{policy}[window={window}]"


def capacity_labels(config: ReproConfig, key: str, dataset: str) -> list[str]:
    """Every policy label whose capacity the report needs on one case, each once."""
    labels = list(POLICIES)
    if (key, dataset) in config.ablation_cases:
        labels += [*PAPER_ABLATION, *OUR_ABLATION]
    if (key, dataset) in config.window_cases:
        labels += [window_label(p, w) for p in WINDOW_POLICIES for w in WINDOWS]
    return list(dict.fromkeys(labels))


def base_spec(config: ReproConfig, setting: Setting, dataset: str, requests: int) -> RunSpec:
    """A run of the case (setting, data set) with `requests` requests; policy and rate set later."""
    return RunSpec(UNIT_POLICY, setting.hardware, WorkloadSpec(dataset, requests))


def capacity_rows(
    config: ReproConfig, bar: Bar, workers: int | None, ray: str | None = None
) -> list[Row]:
    """Fig. 4, Table 4 and the window study: the capacity of every label on every case and
    seed, all searches over one pool."""
    cases: list[tuple[str, str]] = []
    bases: list[RunSpec] = []
    for setting, dataset in config.cases:
        base = base_spec(config, setting, dataset, config.requests)
        for label in capacity_labels(config, setting.key, dataset):
            for seed in range(config.seeds):
                cases.append((setting.key, dataset))
                bases.append(attrs.evolve(base.with_policy(label), seed=seed))
    with bar("capacity searches", len(bases)) as tick:
        found = capacities(bases, workers=workers, on_done=lambda _: tick(1), ray=ray)
    by_spec = {(r.policy, r.seed, i): r for i, r in enumerate(found)}
    rows = []
    for i, ((key, dataset), spec) in enumerate(zip(cases, bases, strict=True)):
        result = by_spec[(spec.label, spec.seed, i)]
        rows.append(
            {
                "setting": key,
                "dataset": dataset,
                "policy": spec.label,
                "seed": spec.seed,
                "capacity": result.capacity,
                "failing": None if math.isinf(result.failing) else result.failing,
                "trials": len(result.trials),
            }
        )
    return rows


OWN = "own"
"""The robustness table's name for the hardware's own predictor."""


def packaged_predictor(hardware: HardwareSpec) -> str:
    """The path of the packaged predictor of a plain roofline profile."""
    return str(PACKAGED / f"{profile_key(hardware.gpu, hardware.model, hardware.tp)}.json")


def robustness_rows(
    config: ReproConfig,
    capacity: Sequence[Row],
    bar: Bar,
    workers: int | None,
    ray: str | None = None,
) -> list[Row]:
    """The robustness table: the capacity of each policy of `ROBUSTNESS_POLICIES` on each
    robustness case with each predictor of `ROBUSTNESS_PREDICTORS`, and with the hardware's
    own where Fig. 4 did not size it already (`capacity`)."""
    tags: list[tuple[str, str, str]] = []
    bases: list[RunSpec] = []
    for key, dataset in config.robustness_cases:
        base = base_spec(config, config.setting(key), dataset, config.requests)
        sized = {r["policy"] for r in capacity if (r["setting"], r["dataset"]) == (key, dataset)}
        for label in ROBUSTNESS_POLICIES:
            runs: list[tuple[str, str | None]] = [] if label in sized else [(OWN, None)]
            runs += [(kind, packaged_predictor(h)) for kind, h in ROBUSTNESS_PREDICTORS]
            for kind, path in runs:
                for seed in range(config.seeds):
                    tags.append((key, dataset, kind))
                    bases.append(attrs.evolve(base.with_policy(label), seed=seed, predictor=path))
    with bar("robustness to the predictor", len(bases)) as tick:
        found = capacities(bases, workers=workers, on_done=lambda _: tick(1), ray=ray)
    return [
        {
            "setting": key,
            "dataset": dataset,
            "predictor": kind,
            "policy": result.policy,
            "seed": result.seed,
            "capacity": result.capacity,
            "failing": None if math.isinf(result.failing) else result.failing,
            "trials": len(result.trials),
        }
        for (key, dataset, kind), result in zip(tags, found, strict=True)
    ]


def limit_rows(config: ReproConfig, bar: Bar) -> list[Row]:
    """Per case, the fluid bound (`bound.limits.limit`: what no policy's capacity exceeds in
    the long run, with the constraints that bind it) and the trace bound of seed 0's trials
    (`bound.limits.trial_bound`: what no policy's capacity on those very trials exceeds)."""
    from slidingpolicy.bound.limits import limit, trial_bound

    rows = []
    with bar("bounds", len(config.cases)) as tick:
        for setting, dataset in config.cases:
            found = limit(WorkloadSpec(dataset), setting.hardware)
            trials = trial_bound(base_spec(config, setting, dataset, config.requests))
            rows.append(
                {
                    "setting": setting.key,
                    "dataset": dataset,
                    "bound": found.bound,
                    "binding": list(found.binding),
                    "unpaced": found.unpaced,
                    "pacing": found.pacing,
                    "iterations": found.iterations,
                    "mean_tokens": found.mean_tokens,
                    "trial_bound": trials.capacity,
                    "trial_seed": trials.seed,
                }
            )
            tick(1)
    return rows


def rows_of(rows: Sequence[Row], key: str, dataset: str, policy: str) -> list[Row]:
    """The rows of one policy on one case."""
    return [r for r in rows if (r["setting"], r["dataset"], r["policy"]) == (key, dataset, policy)]


def mean_capacity(rows: Sequence[Row], key: str, dataset: str, policy: str) -> float:
    """The mean over seeds of `policy`'s capacity on one case."""
    values: list[float] = [r["capacity"] for r in rows_of(rows, key, dataset, policy)]
    return sum(values) / len(values)


def load_rows(
    config: ReproConfig,
    capacity: Sequence[Row],
    bar: Bar,
    workers: int | None,
    ray: str | None = None,
) -> list[Row]:
    """Fig. 5: violation rate and tail latencies against load, up to 2× the unit capacity."""
    labels: list[tuple[str, str, float]] = []
    specs: list[RunSpec] = []
    for key, dataset in config.load_cases:
        unit = mean_capacity(capacity, key, dataset, UNIT_POLICY)
        base = base_spec(config, config.setting(key), dataset, config.requests)
        for policy in LOAD_POLICIES:
            for load in LOADS:
                for seed in range(config.load_seeds):
                    labels.append((key, dataset, load))
                    specs.append(
                        attrs.evolve(base.with_policy(policy).with_rate(load * unit), seed=seed)
                    )
    with bar("load curves", len(specs)) as tick:
        runs = run_many(specs, workers, on_done=lambda _: tick(1), ray=ray)
    rows = []
    for (key, dataset, load), summary in zip(labels, runs, strict=True):
        m = summary.metrics
        rows.append(
            {
                "setting": key,
                "dataset": dataset,
                "policy": summary.spec.label,
                "seed": summary.spec.seed,
                "load": load,
                "rate": summary.spec.rate,
                "violation": 1.0 - m.attainment,
                **{f"ttft_p{q}": getattr(m, f"ttft_p{q}") for q in (50, 90, 99)},
                **{f"tbt_p{q}": getattr(m, f"tbt_p{q}") for q in (50, 90, 99)},
            }
        )
    return rows


def burst_spec(config: ReproConfig, setting: Setting, dataset: str, unit: float) -> RunSpec:
    """Fig. 6's run: the burst shape at `unit` req/s, with enough requests to arrive by its end."""
    shape = config.burst
    expected = unit * (shape.base * (shape.end - shape.duration) + shape.peak * shape.duration)
    arrivals = Burst(unit * shape.base, unit * shape.peak, shape.start, shape.duration)
    base = base_spec(config, setting, dataset, math.ceil(1.25 * expected))
    return attrs.evolve(base, arrivals=arrivals)


def burst_trial(job: tuple[RunSpec, float, float]) -> Row:
    """One run's (arrived, missed) per arrival bin of `width` seconds up to `end` ("bins"),
    and the TTFT p99 and max of its late requests (those whose first token missed its TTFT
    deadline: what a request a policy demoted waited)."""
    spec, width, end = job
    workload = spec.workload.build(spec.arrivals, spec.seed)
    policy = by_name(spec.policy, predictor_of(spec), **dict(spec.policy_options))
    output = simulate(policy, workload, spec.hardware.build(), spec.seed, spec.options)
    arrival = workload.columns().arrival
    bins = round(end / width)
    index = np.minimum((arrival // width).astype(np.int64), bins)
    arrived = np.bincount(index, minlength=bins + 1)[:bins]
    missed = np.bincount(index, weights=~output.outcome.attained, minlength=bins + 1)[:bins]
    late = output.metrics.to_dict()
    return {
        "bins": [[int(a), int(m)] for a, m in zip(arrived, missed, strict=True)],
        "late_ttft_p99": late["late_ttft_p99"],
        "late_ttft_max": late["late_ttft_max"],
    }


def burst_rows(
    config: ReproConfig,
    capacity: Sequence[Row],
    bar: Bar,
    workers: int | None,
    ray: str | None = None,
) -> list[Row]:
    """Fig. 6: violations over time through a burst above capacity and back."""
    jobs: list[tuple[RunSpec, float, float]] = []
    cases = []
    for key, dataset in config.burst_cases:
        unit = mean_capacity(capacity, key, dataset, UNIT_POLICY)
        base = burst_spec(config, config.setting(key), dataset, unit)
        for policy in LOAD_POLICIES:
            for seed in range(config.burst_seeds):
                cases.append((key, dataset, unit))
                spec = attrs.evolve(base.with_policy(policy), seed=seed)
                jobs.append((spec, config.burst.bin, config.burst.end))
    with bar("transient overload", len(jobs)) as tick:
        ran = parallel_map(burst_trial, jobs, workers, tick, ray)
    return [
        {
            "setting": key,
            "dataset": dataset,
            "policy": spec.label,
            "seed": spec.seed,
            "unit": unit,
            **trial,
        }
        for (key, dataset, unit), (spec, _, _), trial in zip(cases, jobs, ran, strict=True)
    ]


def predictor_trial(hardware: HardwareSpec, samples: int) -> list[Row]:
    """Table 5 on one hardware model: fit on 75% of fresh profiled batches, error on the rest."""
    data = profile(hardware.build(), samples, PREDICTOR_SEED)
    cut = int(0.75 * len(data))
    predictor = fit_predictor(data[:cut], source="reproduce")
    return [
        {
            "hardware": f"{hardware.gpu} · {hardware.model} · TP{hardware.tp}",
            "group": r.scenario,
            "samples": r.samples,
            "mae_ms": 1000.0 * r.mae,
            "rmse_ms": 1000.0 * r.rmse,
            "r2": r.r2,
            "bias_ms": 1000.0 * r.bias,
        }
        for r in evaluate(predictor, data[cut:])
    ]


def predictor_job(job: tuple[HardwareSpec, int]) -> list[Row]:
    """`predictor_trial` of one (hardware, samples) pair, for a trial runner's map."""
    return predictor_trial(*job)


def predictor_rows(
    config: ReproConfig, bar: Bar, workers: int | None, ray: str | None = None
) -> list[Row]:
    """Table 5 on every hardware model of `PREDICTOR_HARDWARE`."""
    jobs = [(h, config.predictor_samples) for h in PREDICTOR_HARDWARE]
    with bar("predictor accuracy", len(jobs)) as tick:
        found = parallel_map(predictor_job, jobs, workers, tick, ray)
    return [row for rows in found for row in rows]


def cost_labels() -> list[str]:
    """The policies whose decisions the cost table times: Fig. 4's and each window."""
    labels = [*POLICIES, *(window_label(p, w) for p in WINDOW_POLICIES for w in WINDOWS)]
    return list(dict.fromkeys(labels))


def decision_cost(config: ReproConfig, capacity: Sequence[Row], bar: Bar) -> list[Row]:
    """The scheduler's CPU cost per decision, per policy and path, on the decisions of a run
    at the unit capacity of the first case (timed here, one process: not reproducible)."""
    setting, dataset = config.settings[0], "mixed-v1"
    unit = mean_capacity(capacity, setting.key, dataset, UNIT_POLICY)
    base = base_spec(config, setting, dataset, config.cost_requests).with_rate(unit)
    rows: list[Row] = []
    labels = cost_labels()
    with bar("decision cost", len(labels)) as tick:
        for label in labels:
            spec = base.with_policy(label)
            policy = timed(
                by_name(spec.policy, predictor_of(spec), **dict(spec.policy_options)),
                config.cost_repeats,
            )
            workload = spec.workload.build(spec.arrivals, spec.seed)
            simulate(policy, workload, spec.hardware.build(), spec.seed, spec.options)
            rows += [
                {"setting": setting.key, "dataset": dataset, "policy": label, **row}
                for row in policy.summary()
            ]
            tick(1)
    return rows


def parallel_map(
    function: Callable[[Any], Any],
    jobs: Sequence[Any],
    workers: int | None,
    tick: Tick,
    ray: str | None = None,
) -> list[Any]:
    """`function` over `jobs`, in order, where `trial_runner` runs trials."""
    with trial_runner(workers, ray, jobs=len(jobs)) as runner:
        return runner.map(function, jobs, on_done=lambda _: tick(1))
