"""`slidingpolicy simulate`: one policy on one workload, with its attainment and latencies."""

from __future__ import annotations

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
            help="Poisson arrival rate (req/s); with --trace, rescale its times to this mean rate.",
        ),
    ] = 1.0,
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
    """Run one policy on one workload and print its SLO attainment and latencies."""
    from slidingpolicy.codec import log_line
    from slidingpolicy.engine.results import outcome_rows, write_csv, write_json
    from slidingpolicy.engine.simulator import simulate as run_engine
    from slidingpolicy.engine.sweep import predictor_of
    from slidingpolicy.policies import by_name

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
    handle = None if log is None else log.open("w")

    def write(state: Any, plan: Any, budget: int) -> None:
        assert handle is not None
        handle.write(log_line(state, plan, budget) + "\n")

    try:
        with progress(f"{policy}", len(work)) as advance:
            output = run_engine(
                engine_policy,
                work,
                spec.hardware.build(),
                seed,
                spec.options,
                on_plan=None if handle is None else write,
                progress=advance,
            )
    finally:
        if handle is not None:
            handle.close()
    m = output.metrics
    ids = [r.id for r in work.requests]
    write_json(
        out / "results.json",
        {
            "spec": spec.to_dict(),
            "metrics": m.to_dict(),
            "stalled": output.stalled,
            "end": output.end,
            "requests": outcome_rows(ids, output.outcome),
        },
    )
    write_json(out / "timings.json", output.stats.to_dict())
    write_csv(out / "requests.csv", outcome_rows(ids, output.outcome))
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
