"""`slidingpolicy sweep`: policies at several request rates, attainment per (policy, rate)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from slidingpolicy.cli.options import (
    TRIAL_REQUESTS,
    GpuOpt,
    HardwareChoice,
    ModelOpt,
    OutOpt,
    PoliciesOpt,
    PredictorOpt,
    ProfileOpt,
    RayOpt,
    RequestsOpt,
    SeedOpt,
    SloScaleOpt,
    TiersOpt,
    TpOpt,
    WorkersOpt,
    WorkloadChoice,
    WorkloadOpt,
    parse_policies,
    parse_rates,
    run_spec,
    writable_folder,
)
from slidingpolicy.cli.output import can_plot, command_line, console, pct, progress


def sweep_command(
    context: typer.Context,
    policy: PoliciesOpt = "all",
    rates: Annotated[
        str, typer.Option("--rates", help="Comma-separated Poisson rates (req/s).")
    ] = "0.5,1,1.5,2",
    gpu: GpuOpt = "rtx3090",
    model: ModelOpt = "qwen2.5-7b",
    tp: TpOpt = 2,
    profile: ProfileOpt = None,
    workload: WorkloadOpt = "mixed-v1",
    requests: RequestsOpt = TRIAL_REQUESTS,
    seed: SeedOpt = 0,
    slo_scale: SloScaleOpt = 1.0,
    slo_tiers: TiersOpt = False,
    predictor: PredictorOpt = None,
    workers: WorkersOpt = None,
    ray: RayOpt = None,
    out: OutOpt = Path("results/sweep"),
) -> None:
    """Run policies at several request rates; attainment and tail latency per (policy, rate)."""
    from slidingpolicy.engine.results import (
        runs_document,
        sweep_rows,
        timings_document,
        write_csv,
        write_json,
        write_results,
    )
    from slidingpolicy.engine.sweep import sweep

    chosen = parse_policies(policy)
    rate_list = parse_rates(rates)
    writable_folder(out)
    checked = run_spec(
        chosen[0],
        HardwareChoice(gpu, model, tp, profile),
        WorkloadChoice(workload, requests, seed, slo_scale=slo_scale, slo_tiers=slo_tiers),
        predictor=predictor,
    )
    base = checked.spec
    with progress("sweep", len(chosen) * len(rate_list)) as ticker:
        runs = sweep(base, chosen, rate_list, workers, on_done=lambda _: ticker(1), ray=ray)
    write_results(out / "results.json", runs_document(runs), command_line(context))
    write_json(out / "timings.json", timings_document(runs))
    write_csv(out / "sweep.csv", sweep_rows(runs))
    hardware = checked.hardware.name
    if can_plot():
        from slidingpolicy.engine.plots import plot_sweep

        plot_sweep(runs, out / "sweep.png", f"{workload}, {hardware}, {requests} requests per run")
    table = Table(title=f"SLO attainment on {workload}")
    table.add_column("policy", no_wrap=True)
    for r in rate_list:
        table.add_column(f"{r:g}/s", justify="right")
    for p in chosen:
        table.add_row(escape(p), *(pct(r.metrics.attainment) for r in runs if r.spec.label == p))
    console.print(table)
    console.print(f"results in {out}/ (results.json, timings.json, sweep.csv, sweep.png)")
