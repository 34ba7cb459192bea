"""`slidingpolicy sweep`: policies at several request rates, attainment per (policy, rate)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from slidingpolicy.cli.checked_run import HardwareChoice, WorkloadChoice, run_spec
from slidingpolicy.cli.cluster_options import ClusterChoice
from slidingpolicy.cli.option_sets import CLUSTER, HARDWARE, TRIAL_WORKLOAD, takes
from slidingpolicy.cli.options import (
    OutOpt,
    PoliciesOpt,
    PredictorOpt,
    RayOpt,
    StrictOpt,
    WorkersOpt,
    parse_policies,
    parse_rates,
    writable_folder,
)
from slidingpolicy.cli.output import can_plot, command_line, console, durations, pct, progress
from slidingpolicy.cli.plugins import PluginOpt, load_plugins

if TYPE_CHECKING:
    from slidingpolicy.runs.specs import RunSummary


@takes(HARDWARE, TRIAL_WORKLOAD, CLUSTER)
def sweep_command(
    context: typer.Context,
    policy: PoliciesOpt = "all",
    rates: Annotated[
        str, typer.Option("--rates", help="Comma-separated Poisson rates (req/s).")
    ] = "0.5,1,1.5,2",
    *,
    hardware: HardwareChoice,
    workload: WorkloadChoice,
    cluster: ClusterChoice,
    predictor: PredictorOpt = None,
    strict: StrictOpt = None,
    plugin: PluginOpt = None,
    workers: WorkersOpt = None,
    ray: RayOpt = None,
    out: OutOpt = Path("results/sweep"),
) -> None:
    """Run policies at several request rates; attainment and tail latency per (policy, rate).

    With a --trace, each rate rescales the trace's recorded arrival times to that mean rate
    (see --trace); a trace without times arrives as a Poisson process at each rate. With
    --replicas or --router, each policy runs on a cluster behind each router, at each rate
    (the cluster's).
    """
    from slidingpolicy.runs.results import (
        runs_document,
        sweep_rows,
        timings_document,
        write_csv,
        write_json,
        write_results,
    )
    from slidingpolicy.runs.specs import sweep

    load_plugins(plugin)
    chosen = parse_policies(policy)
    clusters = cluster.clusters(chosen)
    rate_list = parse_rates(rates)
    writable_folder(out)
    checked = run_spec(
        chosen[0], hardware, workload, strict, predictor=predictor, cluster=clusters[0]
    )
    base = checked.spec
    arms = [base.with_policy(p).with_cluster(c).label for p in chosen for c in clusters]
    with progress("sweep", len(arms) * len(rate_list)) as ticker:
        runs = sweep(
            base,
            chosen,
            rate_list,
            workers,
            on_done=lambda _: ticker(1),
            ray=ray,
            clusters=clusters,
        )
    write_results(out / "results.json", runs_document(runs), command_line(context))
    write_json(out / "timings.json", timings_document(runs))
    write_csv(out / "sweep.csv", sweep_rows(runs))
    if can_plot():
        from slidingpolicy.figures.plots import plot_sweep

        setup = (
            f"{base.workload.label}, {checked.hardware.name}, {base.workload.requests} "
            "requests per run"
        )
        plot_sweep(runs, out / "sweep.png", setup)
    console.print(sweep_table(arms, rate_list, runs, base.workload.label))
    console.print(
        "SLO: the share of requests whose every token came by its deadline (eq. 1); p99 TTFT "
        "and p99 ITL (every gap between tokens, TBT) over the run; mean, median and the rest "
        "in sweep.csv",
        markup=False,
        highlight=False,
    )
    from slidingpolicy.runs.drain import worst_note
    from slidingpolicy.workloads.steady_state import trials_text

    trials = trials_text(base.workload.build(base.arrivals, base.seed))
    console.print(trials, markup=False, highlight=False)
    note = worst_note([(f"{r.spec.label} at {r.spec.rate:g} req/s", r.metrics) for r in runs])
    if note is not None:
        console.print(note, markup=False, highlight=False)
    console.print(f"results in {out}/ (results.json, timings.json, sweep.csv, sweep.png)")


def sweep_table(
    chosen: Sequence[str], rates: Sequence[float], runs: Sequence[RunSummary], workload: str
) -> Table:
    """Per policy, at each rate: its SLO attainment, p99 TTFT and p99 ITL, each latency row in
    the unit that reads for it."""
    table = Table(title=f"SLO attainment and tail latency on {workload}")
    table.add_column("policy", no_wrap=True)
    table.add_column("metric", no_wrap=True)
    for rate in rates:
        table.add_column(f"{rate:g}/s", justify="right")
    for policy in chosen:
        mine = [r.metrics for r in runs if r.spec.label == policy]
        table.add_row(escape(policy), "SLO", *(pct(m.attainment) for m in mine))
        for name, values in (
            ("p99 TTFT", [m.ttft_p99 for m in mine]),
            ("p99 ITL", [m.tbt_p99 for m in mine]),
        ):
            unit, shown = durations(values)
            table.add_row("", f"{name} ({unit})", *shown)
        table.add_section()
    return table
