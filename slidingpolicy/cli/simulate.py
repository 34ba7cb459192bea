"""`slidingpolicy simulate`: one policy on one workload, with its attainment and latencies."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from slidingpolicy.cli.options import (
    CheckedRun,
    GpuOpt,
    HardwareChoice,
    ModelOpt,
    OutOpt,
    PredictorOpt,
    ProfileOpt,
    RequestsOpt,
    SeedOpt,
    SloScaleOpt,
    StrictOpt,
    TiersOpt,
    TpOpt,
    TraceOpt,
    WorkloadChoice,
    WorkloadOpt,
    run_spec,
    writable_file,
    writable_folder,
)
from slidingpolicy.cli.output import console, fmt, ms, pct, progress

if TYPE_CHECKING:
    from slidingpolicy.engine.simulator import RunOutput


def simulate(
    policy: Annotated[
        str, typer.Option("--policy", "-p", help="Policy name (see `policies`).")
    ] = "slidingserve",
    rate: Annotated[
        float | None,
        typer.Option(
            "--rate",
            "-r",
            help=(
                "Poisson arrival rate (req/s) [default: 1]. With a --trace that records arrival "
                "times, those times are replayed as recorded unless --rate is given, which "
                "rescales them to this mean rate; a trace without times arrives at Poisson --rate."
            ),
        ),
    ] = None,
    gpu: GpuOpt = "rtx3090",
    model: ModelOpt = "qwen2.5-7b",
    tp: TpOpt = 2,
    profile: ProfileOpt = None,
    workload: WorkloadOpt = "mixed-v1",
    trace: TraceOpt = None,
    requests: RequestsOpt = 300,
    seed: SeedOpt = 0,
    slo_scale: SloScaleOpt = 1.0,
    slo_tiers: TiersOpt = False,
    strict: StrictOpt = False,
    predictor: PredictorOpt = None,
    log: Annotated[
        Path | None, typer.Option("--log", help="Write every (state, plan) as JSONL, for `check`.")
    ] = None,
    out: OutOpt = Path("results/simulate"),
) -> None:
    """Run one policy on one workload and print its SLO attainment and latencies.

    Writes results.json, timings.json, requests.csv (one row per request: data set, tier,
    arrival, lengths, SLOs and outcome) and requests.png under OUT.
    """
    writable_folder(out)
    if log is not None:
        writable_file(log, "--log")
    checked = run_spec(
        policy,
        HardwareChoice(gpu, model, tp, profile),
        WorkloadChoice(workload, requests, seed, trace, slo_scale, slo_tiers, rate),
        strict,
        predictor,
    )
    output = run_checked(checked, policy, log)
    write_results(out, checked, output, policy)
    console.print(
        metrics_table(output, f"{policy} on {checked.spec.workload.label}, {requests} requests")
    )
    if output.stalled:
        console.print("[yellow]stalled: some requests could never be scheduled[/yellow]")
    console.print(f"results in {out}/")


def run_checked(checked: CheckedRun, label: str, log: Path | None) -> RunOutput:
    """Simulate the checked run, with a progress bar, writing every (state, plan) to `log`."""
    from slidingpolicy._io import replace_atomically
    from slidingpolicy.codec import log_line
    from slidingpolicy.engine.simulator import simulate as run_engine

    spec = checked.spec
    with ExitStack() as stack:
        on_plan = None
        if log is not None:
            handle = stack.enter_context(stack.enter_context(replace_atomically(log)).open("w"))

            def on_plan(state: Any, plan: Any, budget: int) -> None:
                handle.write(log_line(state, plan, budget) + "\n")

        with progress(f"{label}", len(checked.workload)) as advance:
            return run_engine(
                checked.policy,
                checked.workload,
                checked.hardware,
                spec.seed,
                spec.options,
                on_plan=on_plan,
                progress=advance,
            )


def write_results(out: Path, checked: CheckedRun, output: RunOutput, label: str) -> None:
    """results.json, timings.json, requests.csv and requests.png under `out`."""
    from slidingpolicy.engine.plots import plot_requests
    from slidingpolicy.engine.results import request_rows, write_csv, write_json

    spec, work, m = checked.spec, checked.workload, output.metrics
    rows = request_rows(work, output.outcome)
    write_json(
        out / "results.json",
        {
            "spec": spec.to_dict(),
            "metrics": m.to_dict(),
            "stalled": output.stalled,
            "end": output.end,
            "requests": rows,
        },
    )
    write_json(out / "timings.json", output.stats.to_dict())
    write_csv(out / "requests.csv", rows)
    plot_requests(
        work,
        output.outcome,
        out / "requests.png",
        f"{label} on {Path(spec.workload.label).name}, {spec.workload.requests} requests, "
        f"{checked.hardware.name}\n{pct(m.attainment)} met their SLO",
    )


def metrics_table(output: RunOutput, title: str) -> Table:
    """The run's attainment, latencies, throughput and engine figures, one per row."""
    m = output.metrics
    table = Table(title=title)
    table.add_column("metric")
    table.add_column("value", justify="right")
    for name, value in (
        ("SLO attainment (every token on time)", pct(m.attainment)),
        ("TTFT attainment", pct(m.ttft_attainment)),
        ("TBT attainment (max gap)", pct(m.tbt_attainment)),
        (
            "TTFT p50 / p90 / p99 (ms)",
            " / ".join(ms(v) for v in (m.ttft_p50, m.ttft_p90, m.ttft_p99)),
        ),
        ("TBT p50 / p90 / p99 (ms)", " / ".join(ms(v) for v in (m.tbt_p50, m.tbt_p90, m.tbt_p99))),
        ("TTFT of late requests p99 / max (ms)", f"{ms(m.late_ttft_p99)} / {ms(m.late_ttft_max)}"),
        ("throughput (tokens/s)", fmt(m.token_throughput, 1)),
        ("completed", f"{m.completed}/{m.requests}"),
        ("preemptions", str(m.preemptions)),
        ("predictor MAE (ms)", ms(m.predictor_mae)),
        ("policy CPU per decision p50 (µs)", fmt(output.stats.policy_cpu_p50 * 1e6, 0)),
    ):
        table.add_row(name, value)
    return table
