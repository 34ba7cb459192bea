"""Option sets: options that commands take together (the hardware, the workload), declared
once and received by a command as the one record they build.

A command names the record in its signature (`*, hardware: HardwareChoice`) and is decorated
with `@takes(HARDWARE)`: typer sees the set's options where that parameter stands, so --help
lists them in the command's order, and the command receives the record built from them.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import attrs

from slidingpolicy.cli.checked_run import HardwareChoice, WorkloadChoice
from slidingpolicy.cli.cluster_options import (
    ClusterChoice,
    ReplicasOpt,
    ReportPeriodOpt,
    RerouteOpt,
    RouterOpt,
)
from slidingpolicy.cli.options import (
    TRIAL_REQUESTS,
    TRIAL_SEEDS,
    GpuOpt,
    HardwareTraceOpt,
    KvTokensOpt,
    ModelOpt,
    ProfileOpt,
    RequestsOpt,
    SeedOpt,
    SeedsOpt,
    SloScaleOpt,
    TiersOpt,
    TpOpt,
    TraceOpt,
    TrialRequestsOpt,
    WholeOpt,
    WorkloadOpt,
)

T = TypeVar("T")


@attrs.frozen(slots=True)
class Param:
    """One option of a set: its parameter name, its type with the typer option (an `Annotated`
    alias of `cli.options`) and its default."""

    name: str
    hint: Any
    default: Any


@attrs.frozen(slots=True)
class OptionSet:
    """Options and the record they build: `build(**values)`, each option's value by its name.
    A command takes the set through a parameter annotated with `record`."""

    record: type[Any]
    params: tuple[Param, ...]
    build: Callable[..., Any]

    def only(self, *names: str) -> OptionSet:
        """The set with only the options `names` (in the set's order); `build` must default
        the others."""
        unknown = set(names) - {p.name for p in self.params}
        if unknown:
            raise ValueError(f"{self.record.__name__} options have no {sorted(unknown)}")
        return attrs.evolve(self, params=tuple(p for p in self.params if p.name in names))


def takes(*sets: OptionSet) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """A command that takes each of `sets`: its parameter annotated with the set's record
    gives way to the set's options, and receives the record built from their values."""

    def decorate(command: Callable[..., T]) -> Callable[..., T]:
        signature = inspect.signature(command, eval_str=True)
        received: dict[str, OptionSet] = {}
        parameters: list[inspect.Parameter] = []
        for parameter in signature.parameters.values():
            chosen = [s for s in sets if parameter.annotation is s.record]
            if not chosen:
                parameters.append(parameter)
                continue
            (received[parameter.name],) = chosen
            parameters.extend(
                inspect.Parameter(p.name, parameter.kind, default=p.default, annotation=p.hint)
                for p in received[parameter.name].params
            )
        missing = [s.record.__name__ for s in sets if s not in received.values()]
        if missing:
            raise TypeError(f"{command.__name__} has no parameter of type {', '.join(missing)}")

        @functools.wraps(command)
        def wrapper(**values: Any) -> T:
            for name, taken in received.items():
                values[name] = taken.build(**{p.name: values.pop(p.name) for p in taken.params})
            return command(**values)

        shown = signature.replace(parameters=parameters)
        wrapper.__signature__ = shown  # type: ignore[attr-defined]
        wrapper.__annotations__ = {p.name: p.annotation for p in parameters}
        wrapper.__annotations__["return"] = signature.return_annotation
        return wrapper

    return decorate


def hardware_choice(
    gpu: str,
    model: str,
    tp: int,
    profile: Path | None = None,
    hardware_trace: list[Path] | None = None,
    kv_tokens: int | None = None,
) -> HardwareChoice:
    """The hardware as given: --hardware-trace may be repeated, or absent."""
    return HardwareChoice(gpu, model, tp, profile, tuple(hardware_trace or ()), kv_tokens)


GPU = Param("gpu", GpuOpt, "rtx3090")
MODEL = Param("model", ModelOpt, "qwen2.5-7b")
TP = Param("tp", TpOpt, 2)
HARDWARE = OptionSet(
    HardwareChoice,
    (
        GPU,
        MODEL,
        TP,
        Param("profile", ProfileOpt, None),
        Param("hardware_trace", HardwareTraceOpt, None),
        Param("kv_tokens", KvTokensOpt, None),
    ),
    hardware_choice,
)
"""--hardware, --model, --tp, --profile, --hardware-trace and --kv-tokens."""
NAMED_HARDWARE = HARDWARE.only("gpu", "model", "tp")
"""--hardware, --model and --tp: the hardware model by its names."""

WORKLOAD_NAME = Param("workload", WorkloadOpt, "mixed-v1")
TRACE = Param("trace", TraceOpt, None)
SEED = Param("seed", SeedOpt, 0)
SLO_SCALE = Param("slo_scale", SloScaleOpt, 1.0)
SLO_TIERS = Param("slo_tiers", TiersOpt, False)
TRIAL_REQUESTS_PARAM = Param("requests", TrialRequestsOpt, None)
WHOLE = Param("whole", WholeOpt, False)
WORKLOAD = OptionSet(
    WorkloadChoice,
    (
        WORKLOAD_NAME,
        TRACE,
        Param("requests", RequestsOpt, None),
        SEED,
        SLO_SCALE,
        SLO_TIERS,
        WHOLE,
    ),
    WorkloadChoice,
)
"""--workload, --trace, --requests (default 300), --seed, --slo-scale, --slo-tiers and
--whole."""
TRIAL_WORKLOAD = OptionSet(
    WorkloadChoice,
    (WORKLOAD_NAME, TRACE, TRIAL_REQUESTS_PARAM, SEED, SLO_SCALE, SLO_TIERS, WHOLE),
    partial(WorkloadChoice, fallback=TRIAL_REQUESTS),
)
"""`WORKLOAD` with `TRIAL_REQUESTS` requests per run by default."""
SEEDED_TRIAL_WORKLOAD = OptionSet(
    WorkloadChoice,
    (
        WORKLOAD_NAME,
        TRACE,
        TRIAL_REQUESTS_PARAM,
        SEED,
        Param("seeds", SeedsOpt, TRIAL_SEEDS),
        SLO_SCALE,
        SLO_TIERS,
        WHOLE,
    ),
    partial(WorkloadChoice, fallback=TRIAL_REQUESTS),
)
"""`TRIAL_WORKLOAD` with --seeds (default `TRIAL_SEEDS`) after --seed."""

CLUSTER = OptionSet(
    ClusterChoice,
    (
        Param("replicas", ReplicasOpt, 1),
        Param("router", RouterOpt, None),
        Param("report_period", ReportPeriodOpt, 0.0),
        Param("reroute", RerouteOpt, False),
    ),
    ClusterChoice,
)
"""--replicas, --router, --report-period and --reroute: a cluster behind a router."""
