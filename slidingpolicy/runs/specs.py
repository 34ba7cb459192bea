"""Runs by specification: what to simulate, as a picklable record, and `run_many` to run many
wherever trials run (`runs.workers`: here, local processes or a Ray cluster).

A `RunSpec` names everything a run needs (policy, hardware, workload, arrivals, seed, engine
options), so a worker process rebuilds the run from it alone and the run is reproducible from
its seed: the workload's lengths and arrivals come from `seed`, the hardware's noise from
`engine_rng(seed)`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs

from slidingpolicy import _validate
from slidingpolicy.cluster import ClusterSpec, ClusterStats, simulate_cluster
from slidingpolicy.engine.run_types import EngineOptions, EngineStats
from slidingpolicy.engine.simulator import simulate
from slidingpolicy.errors import InvalidRecordError
from slidingpolicy.hardware import HardwareModel, build_hardware
from slidingpolicy.hardware.build import DEFAULT_NOISE_SIGMA
from slidingpolicy.hardware.traced import traced_model
from slidingpolicy.metrics import Metrics
from slidingpolicy.policies import by_name
from slidingpolicy.policies.labels import label, parse_label
from slidingpolicy.predictors.calibration import predictor_for
from slidingpolicy.pricing import LatencyPredictor
from slidingpolicy.runs.workers import trial_runner
from slidingpolicy.workloads import (
    ArrivalProcess,
    Burst,
    Poisson,
    TraceTimes,
    Workload,
    load_trace,
    make_workload,
    steady_state,
    stream_seed,
    trace_draw,
    trace_workload,
)
from slidingpolicy.workloads.traces import Trace


def _paths(value: Sequence[str]) -> tuple[str, ...]:
    return tuple(value)


@attrs.frozen(slots=True)
class HardwareSpec:
    """A built-in hardware model by name (`hardware.build`), optionally with a profile CSV;
    or a real engine's, from its step traces (`trace`, which replaces the rest)."""

    gpu: str = "rtx3090"
    model: str = "qwen2.5-7b"
    tp: int = 2
    profile: str | None = None
    noise_sigma: float = DEFAULT_NOISE_SIGMA
    trace: tuple[str, ...] = attrs.field(default=(), converter=_paths)

    def build(self) -> HardwareModel:
        """The hardware model (raises UnknownNameError for unknown names)."""
        profile = None if self.profile is None else Path(self.profile)
        return build_hardware(self.gpu, self.model, self.tp, profile, self.noise_sigma, self.trace)

    def predictor(self) -> LatencyPredictor:
        """The predictor calibrated to this hardware: packaged, or fitted once and cached; for
        a step trace, its own fit (what `slidingpolicy fit --trace` gives from all its steps)."""
        if self.trace:
            return traced_model(self.trace).fit
        return predictor_for(self.gpu, self.model, self.tp, self.build, self.profile is None)


@attrs.frozen(slots=True)
class WorkloadSpec:
    """A named synthetic workload, or a trace file (`trace`), and how many requests of it.

    At a constant rate (Poisson arrivals, or a trace's times rescaled to a rate) a run is a
    steady-state trial (`workloads.steady_state`): `requests` is the number it counts, after
    a warm-up and with arrivals going on behind them; `whole` makes it the finite trial of
    `requests` requests that counts them all, as a burst or a trace's own times always are.

    `recorded` is the trace as read, when it was read already: a run then never reads the file
    again (a pipe can be read only once), and it travels with the spec to the workers. It is
    not part of the spec's identity or of its JSON, where the path names it.
    """

    name: str = "mixed-v1"
    requests: int = 300
    trace: str | None = None
    slo_scale: float = 1.0
    slo_tiers: bool = False
    slo_source: str = "sharegpt"
    whole: bool = False
    recorded: Trace | None = attrs.field(default=None, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        _validate.integer("workload", "requests", self.requests, 1)
        _validate.flag("workload", "whole", self.whole)

    def build(self, arrivals: ArrivalProcess | None, seed: int) -> Workload:
        """The workload's requests with these arrivals (None: a trace's own times), a
        steady-state trial at a constant rate unless `whole` (class docstring)."""
        counted = self._counted(arrivals, seed)
        rate = steady_rate(arrivals)
        if self.whole or rate is None:
            return counted
        return steady_state(counted, rate, functools.partial(self._draw, rate, seed))

    def _draw(self, rate: float, seed: int, count: int, stream: int) -> Workload:
        """`count` more requests of the workload's population at `rate`, from the stream
        `stream` of `seed` (`workloads.steady_state.Draw`)."""
        seeded = stream_seed(seed, stream)
        if self.trace is not None:
            return trace_draw(
                self._trace(self.trace),
                count,
                Poisson(rate),
                seeded,
                self.slo_source,
                self.slo_scale,
                self.slo_tiers,
            )
        return make_workload(
            self.name, count, Poisson(rate), seeded, self.slo_scale, self.slo_tiers
        )

    def _trace(self, path: str) -> Trace:
        """The trace at `path`, as read already or read now."""
        return load_trace(path) if self.recorded is None else self.recorded

    def _counted(self, arrivals: ArrivalProcess | None, seed: int) -> Workload:
        """The requests a trial counts: the finite trial of `requests` requests."""
        if self.trace is not None:
            return trace_workload(
                self._trace(self.trace),
                arrivals,
                self.requests,
                seed,
                self.slo_source,
                self.slo_scale,
                self.slo_tiers,
            )
        if arrivals is None:
            raise InvalidRecordError(f"workload {self.name!r}", "arrivals", "needs a rate")
        return make_workload(
            self.name, self.requests, arrivals, seed, self.slo_scale, self.slo_tiers
        )

    @property
    def label(self) -> str:
        """The trace's path or the workload's name."""
        return self.trace if self.trace is not None else self.name


@attrs.frozen(slots=True)
class RunSpec:
    """Everything one simulation needs; `policy_options` are the registry's keyword options."""

    policy: str
    hardware: HardwareSpec = attrs.field(factory=HardwareSpec)
    workload: WorkloadSpec = attrs.field(factory=WorkloadSpec)
    arrivals: ArrivalProcess | None = attrs.field(factory=lambda: Poisson(1.0))
    seed: int = 0
    options: EngineOptions = attrs.field(factory=EngineOptions)
    predictor: str | None = None
    policy_options: tuple[tuple[str, Any], ...] = ()
    cluster: ClusterSpec | None = None
    """N replicas of the policy behind a router (`slidingpolicy.cluster`); None: one engine."""

    @property
    def rate(self) -> float:
        """The arrival rate (req/s) where there is one; NaN for a trace's own times."""
        arrivals = self.arrivals
        if isinstance(arrivals, Poisson):
            return arrivals.rate
        if isinstance(arrivals, Burst):
            return arrivals.base_rate
        if isinstance(arrivals, TraceTimes) and arrivals.rate is not None:
            return arrivals.rate
        return math.nan

    @property
    def label(self) -> str:
        """The policy and its options as results name them, e.g. sarathi-edf[token_budget=768];
        on a cluster, with it: ``slidingserve+ @ 16×slo-aware``."""
        named = label(self.policy, self.policy_options)
        return named if self.cluster is None else f"{named} @ {self.cluster.label}"

    def with_policy(self, text: str) -> RunSpec:
        """The same run under the policy a label names (`policies.labels`)."""
        name, options = parse_label(text)
        return attrs.evolve(self, policy=name, policy_options=options)

    def with_cluster(self, cluster: ClusterSpec | None) -> RunSpec:
        """The same run on `cluster` (None: on one engine)."""
        return attrs.evolve(self, cluster=cluster)

    def with_rate(self, rate: float) -> RunSpec:
        """The same run at rate `rate`: Poisson arrivals, or a trace's recorded times rescaled
        to that mean rate when the run replays them (`TraceTimes`)."""
        if isinstance(self.arrivals, TraceTimes):
            return attrs.evolve(self, arrivals=TraceTimes(rate))
        return attrs.evolve(self, arrivals=Poisson(rate))

    def to_dict(self) -> dict[str, Any]:
        """The spec as plain JSON values (deterministic)."""
        arrivals: dict[str, Any] | None = None
        if self.arrivals is not None:
            arrivals = {"kind": type(self.arrivals).__name__.lower(), **attrs.asdict(self.arrivals)}
        options = attrs.asdict(self.options)
        cluster = {} if self.cluster is None else {"cluster": self.cluster.to_dict()}
        return {
            **cluster,
            "policy": self.policy,
            "policy_options": dict(self.policy_options),
            "hardware": attrs.asdict(self.hardware, filter=recorded_field),
            "workload": attrs.asdict(self.workload, filter=lambda a, _: a.name != "recorded"),
            "arrivals": arrivals,
            "seed": self.seed,
            "engine": options,
            "predictor": self.predictor,
        }


@attrs.frozen(slots=True)
class RunSummary:
    """What a run gives back: the spec, metrics, whether it stalled, and the engine figures."""

    spec: RunSpec
    metrics: Metrics
    stalled: bool
    end: float
    stats: EngineStats
    stopped_early: bool = False
    cluster: ClusterStats | None = None
    """What the router did, on a cluster."""

    def to_dict(self) -> dict[str, Any]:
        """The deterministic part (no wall-clock values) as JSON values."""
        cluster = {} if self.cluster is None else {"cluster": self.cluster.to_dict()}
        return {
            "spec": self.spec.to_dict(),
            "metrics": self.metrics.to_dict(),
            "stalled": self.stalled,
            "stopped_early": self.stopped_early,
            "end": self.end,
            **cluster,
        }


def steady_rate(arrivals: ArrivalProcess | None) -> float | None:
    """The constant rate of a steady-state trial under `arrivals`: Poisson's, or a trace's
    times rescaled to a rate; None for a burst or a trace's own times (a finite trial)."""
    if isinstance(arrivals, Poisson | TraceTimes):
        return arrivals.rate
    return None


def recorded_field(field: attrs.Attribute[Any], value: object) -> bool:
    """Whether results record a field (an `attrs.asdict` filter): a hardware spec's `trace`
    only when it has one, so a built-in model's record reads as it did before traces."""
    return field is not attrs.fields(HardwareSpec).trace or bool(value)


def predictor_of(spec: RunSpec) -> LatencyPredictor:
    """The spec's predictor file, or the hardware's default."""
    if spec.predictor is not None:
        return LatencyPredictor.load(Path(spec.predictor))
    return spec.hardware.predictor()


def run(spec: RunSpec) -> RunSummary:
    """Build and simulate the run `spec` describes: on one engine, or on its cluster."""
    hardware = spec.hardware.build()
    predictor = predictor_of(spec)
    options = dict(spec.policy_options)
    workload = spec.workload.build(spec.arrivals, spec.seed)
    if spec.cluster is None:
        output = simulate(
            by_name(spec.policy, predictor, **options), workload, hardware, spec.seed, spec.options
        )
        routed = None
    else:
        policies = [
            by_name(spec.policy, predictor, **options) for _ in range(spec.cluster.replicas)
        ]
        ran = simulate_cluster(
            policies, workload, hardware, spec.seed, spec.cluster, predictor, spec.options
        )
        output, routed = ran.run, ran.cluster
    return RunSummary(
        spec, output.metrics, output.stalled, output.end, output.stats, output.stopped_early, routed
    )


def run_many(
    specs: Sequence[RunSpec],
    workers: int | None = None,
    on_done: Callable[[RunSummary], None] | None = None,
    *,
    ray: str | None = None,
) -> list[RunSummary]:
    """Run every spec, on the Ray cluster at `ray` or in `workers` local processes
    (`runs.workers`); results in the order of `specs`, the same wherever they ran."""
    with trial_runner(workers, ray, jobs=len(specs)) as runner:
        return runner.map(run, specs, on_done)


def sweep(
    base: RunSpec,
    policies: Sequence[str],
    rates: Sequence[float],
    workers: int | None = None,
    on_done: Callable[[RunSummary], None] | None = None,
    *,
    ray: str | None = None,
    clusters: Sequence[ClusterSpec | None] = (None,),
) -> list[RunSummary]:
    """Every policy (a label, `policies.labels`) on every cluster (None: one engine) at every
    Poisson rate, same seed (same lengths at every rate)."""
    specs = [
        base.with_policy(p).with_cluster(c).with_rate(r)
        for p in policies
        for c in clusters
        for r in rates
    ]
    return run_many(specs, workers, on_done, ray=ray)
