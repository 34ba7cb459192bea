"""`slidingpolicy simulate`: one policy on one workload, with its attainment and latencies."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from slidingpolicy.cli.options import (
    GpuOpt,
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
    WorkloadOpt,
    run_spec,
    writable_file,
    writable_folder,
)
from slidingpolicy.cli.output import console, fmt, ms, pct, progress


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
    from slidingpolicy._io import replace_atomically
    from slidingpolicy.codec import log_line
    from slidingpolicy.engine.plots import plot_requests
    from slidingpolicy.engine.results import request_rows, write_csv, write_json
    from slidingpolicy.engine.simulator import simulate as run_engine
    from slidingpolicy.engine.sweep import predictor_of
    from slidingpolicy.policies import by_name

    writable_folder(out)
    if log is not None:
        writable_file(log, "--log")
    spec = run_spec(
        policy,
        gpu,
        model,
        tp,
        profile,
        workload,
        trace,
        requests,
        seed,
        slo_scale,
        slo_tiers,
        strict,
        predictor,
        rate,
    )
    work = spec.workload.build(spec.arrivals, spec.seed)
    engine_policy = by_name(policy, predictor_of(spec))
    hardware = spec.hardware.build()
    with ExitStack() as stack:
        on_plan = None
        if log is not None:
            handle = stack.enter_context(stack.enter_context(replace_atomically(log)).open("w"))

            def on_plan(state: Any, plan: Any, budget: int) -> None:
                handle.write(log_line(state, plan, budget) + "\n")

        with progress(f"{policy}", len(work)) as advance:
            output = run_engine(
                engine_policy,
                work,
                hardware,
                seed,
                spec.options,
                on_plan=on_plan,
                progress=advance,
            )
    m = output.metrics
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
        f"{policy} on {Path(spec.workload.label).name}, {requests} requests, {hardware.name}\n"
        f"{pct(m.attainment)} met their SLO",
    )
    table = Table(title=f"{policy} on {spec.workload.label}, {requests} requests")
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
        ("throughput (tokens/s)", fmt(m.token_throughput, 1)),
        ("completed", f"{m.completed}/{m.requests}"),
        ("preemptions", str(m.preemptions)),
        ("predictor MAE (ms)", ms(m.predictor_mae)),
        ("policy CPU per decision p50 (µs)", fmt(output.stats.policy_cpu_p50 * 1e6, 0)),
    ):
        table.add_row(name, value)
    console.print(table)
    if output.stalled:
        console.print("[yellow]stalled: some requests could never be scheduled[/yellow]")
    console.print(f"results in {out}/")
