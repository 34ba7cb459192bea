"""`slidingpolicy capacity`: each policy's highest Poisson rate with ≥99% SLO attainment."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from slidingpolicy.cli.options import (
    CliError,
    GpuOpt,
    ModelOpt,
    OutOpt,
    PoliciesOpt,
    PredictorOpt,
    ProfileOpt,
    RequestsOpt,
    SeedOpt,
    SloScaleOpt,
    TiersOpt,
    TpOpt,
    WorkersOpt,
    WorkloadOpt,
    parse_policies,
    run_spec,
)
from slidingpolicy.cli.output import console, fmt, progress


def capacity(
    policy: PoliciesOpt = "slidingserve",
    gpu: GpuOpt = "rtx3090",
    model: ModelOpt = "qwen2.5-7b",
    tp: TpOpt = 2,
    profile: ProfileOpt = None,
    workload: WorkloadOpt = "mixed-v1",
    requests: RequestsOpt = 200,
    seed: SeedOpt = 0,
    slo_scale: SloScaleOpt = 1.0,
    slo_tiers: TiersOpt = False,
    start: Annotated[float, typer.Option("--start", help="First rate tried (req/s).")] = 1.0,
    predictor: PredictorOpt = None,
    workers: WorkersOpt = None,
    out: OutOpt = Path("results/capacity"),
) -> None:
    """Find each policy's capacity: the highest Poisson rate with ≥99% SLO attainment (2.5%)."""
    import attrs

    from slidingpolicy.engine.capacity import capacities
    from slidingpolicy.engine.plots import plot_capacity
    from slidingpolicy.engine.results import capacity_rows, write_csv, write_json

    chosen = parse_policies(policy)
    if not (math.isfinite(start) and start > 0):
        raise CliError(f"--start={start} must be a finite rate > 0")
    base = run_spec(
        chosen[0],
        gpu,
        model,
        tp,
        profile,
        workload,
        None,
        requests,
        seed,
        slo_scale,
        slo_tiers,
        predictor=predictor,
    )
    with progress("capacity search", len(chosen)) as advance:
        found = capacities(
            [attrs.evolve(base, policy=p) for p in chosen],
            start,
            workers=workers,
            on_done=lambda _: advance(1),
        )
    write_json(
        out / "capacity.json", {"base": base.to_dict(), "capacity": [c.to_dict() for c in found]}
    )
    write_csv(out / "capacity.csv", capacity_rows(found))
    plot_capacity(found, out / "capacity.png", f"capacity on {workload}")
    table = Table(title=f"capacity on {workload}, {requests} requests per trial")
    table.add_column("policy", no_wrap=True)
    table.add_column("capacity (req/s)", justify="right")
    table.add_column("trials", justify="right")
    for c in found:
        table.add_row(c.policy, fmt(c.capacity, 3), str(len(c.trials)))
    console.print(table)
    console.print(f"results in {out}/")
