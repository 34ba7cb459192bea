"""A run checked from the command line before it starts: the hardware and workload as given,
the arrival process, and the run spec with its hardware, workload and policy built."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from slidingpolicy.cli.options import (
    DEFAULT_RATE,
    CliError,
    check_known,
    check_requests,
    within_rates,
)
from slidingpolicy.workloads.arrivals import RATE_RANGE

if TYPE_CHECKING:
    from slidingpolicy.cluster import ClusterSpec
    from slidingpolicy.hardware import HardwareModel
    from slidingpolicy.policy import Policy
    from slidingpolicy.runs.specs import HardwareSpec, RunSpec
    from slidingpolicy.workloads import Poisson, Trace, TraceTimes, Workload


def arrivals_of(rate: float | None, recorded: Trace | None, requests: int) -> Poisson | TraceTimes:
    """The arrival process: Poisson at --rate (default 1/s) for a synthetic workload or a trace
    without times; a trace's recorded times, rescaled to --rate only when it is given."""
    from slidingpolicy.workloads import Poisson, TraceTimes

    if rate is not None and not within_rates(rate):
        raise CliError(f"--rate={rate:g} must be {RATE_RANGE}")
    if recorded is None:
        return Poisson(DEFAULT_RATE if rate is None else rate)
    if requests > len(recorded):
        raise CliError(
            f"--requests={requests} but {recorded.path} holds {len(recorded)} requests; "
            f"pass --requests {len(recorded)} or fewer"
        )
    if recorded.arrivals is None:
        return Poisson(DEFAULT_RATE if rate is None else rate)
    return TraceTimes(rate)


@attrs.frozen(slots=True)
class HardwareChoice:
    """--hardware, --model, --tp, --profile, --hardware-trace and --kv-tokens, as given."""

    gpu: str
    model: str
    tp: int
    profile: Path | None = None
    trace: tuple[Path, ...] = ()
    kv_tokens: int | None = None

    def spec(self) -> HardwareSpec:
        """The hardware spec these name (--kv-tokens goes to the engine's options)."""
        from slidingpolicy.runs.specs import HardwareSpec

        profile = None if self.profile is None else str(self.profile)
        traces = tuple(str(t) for t in self.trace)
        return HardwareSpec(self.gpu, self.model, self.tp, profile, trace=traces)


@attrs.frozen(slots=True)
class WorkloadChoice:
    """--workload (or --trace), --requests, --seed, --slo-scale, --slo-tiers, --rate,
    --seeds (how many seeds from --seed a command runs) and --whole (a finite trial counting
    every request, not a steady-state one); `fallback` is the command's number of requests
    when --requests is not given (with a --trace, every request of it)."""

    workload: str
    requests: int | None
    seed: int
    trace: Path | None = None
    slo_scale: float = 1.0
    slo_tiers: bool = False
    rate: float | None = None
    fallback: int = 300
    seeds: int = 1
    whole: bool = False


@attrs.frozen(slots=True)
class CheckedRun:
    """A run spec whose every name resolved, with what checking it built (once): its hardware
    model, its workload and its policy, for a command that runs it here."""

    spec: RunSpec
    hardware: HardwareModel
    workload: Workload
    policy: Policy[Any]


def run_spec(
    policy: str,
    hardware: HardwareChoice,
    workload: WorkloadChoice,
    strict: bool | None = None,
    predictor: Path | None = None,
    cluster: ClusterSpec | None = None,
) -> CheckedRun:
    """The checked run of `policy` (a label) on `hardware` and `workload` (on `cluster`'s
    replicas, when given): every name resolved and the hardware, workload and policy built
    here, so that bad input fails with one line before any worker starts."""
    from slidingpolicy.engine import EngineOptions
    from slidingpolicy.policies import by_name, names
    from slidingpolicy.policies.labels import parse_label
    from slidingpolicy.runs.specs import RunSpec, WorkloadSpec, predictor_of
    from slidingpolicy.workloads import load_trace, workload_names

    name, options = parse_label(policy)
    check_known("policy", name, names())
    w = workload
    recorded = None
    if w.trace is None:
        check_known("workload", w.workload, workload_names())
    else:
        recorded = load_trace(w.trace)
    requests = w.requests
    if requests is None:
        requests = w.fallback if recorded is None else len(recorded)
    check_requests(requests)
    hardware_spec = hardware.spec()
    model = hardware_spec.build()
    arrivals = arrivals_of(w.rate, recorded, requests)
    trace = None if w.trace is None else str(w.trace)
    spec = RunSpec(
        policy=name,
        policy_options=options,
        hardware=hardware_spec,
        workload=WorkloadSpec(
            w.workload,
            requests,
            trace,
            w.slo_scale,
            w.slo_tiers,
            whole=w.whole,
            recorded=recorded,
        ),
        arrivals=arrivals,
        seed=w.seed,
        options=EngineOptions(strict=strict, kv_capacity_tokens=hardware.kv_tokens),
        predictor=None if predictor is None else str(predictor),
        cluster=cluster,
    )
    built = by_name(name, predictor_of(spec), **dict(options))
    return CheckedRun(spec, model, spec.workload.build(arrivals, w.seed), built)
