"""`slidingpolicy`: run scheduling policies on LLM serving workloads and compare them.

Bad arguments print one line on stderr and exit with code 2, never a traceback.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from slidingpolicy.errors import SlidingPolicyError

app = typer.Typer(
    name="slidingpolicy",
    help=(
        "Simulate SLO-aware LLM scheduling policies (SlidingServe and its baselines) on "
        "realistic workloads over a model of real GPUs, and measure SLO attainment and "
        "capacity (the highest request rate at which 99% of requests meet their SLO).\n\n"
        "Start with `slidingpolicy demo`."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
console = Console()
err_console = Console(stderr=True)

EXIT_BAD_INPUT = 2


class CliError(SlidingPolicyError):
    """A bad command-line argument the parser could not catch."""


# --- shared options ------------------------------------------------------------------------

GpuOpt = Annotated[
    str,
    typer.Option("--hardware", help="GPU: rtx3090, a100-80g or h100.", rich_help_panel="Hardware"),
]
ModelOpt = Annotated[
    str, typer.Option("--model", help="Model: qwen2.5-7b or llama3-8b.", rich_help_panel="Hardware")
]
TpOpt = Annotated[
    int, typer.Option("--tp", help="Tensor-parallel GPUs.", rich_help_panel="Hardware")
]
ProfileOpt = Annotated[
    Path | None,
    typer.Option(
        "--profile",
        help="Measured per-operator timings (Vidur profiling CSV) to use instead of the roofline.",
        rich_help_panel="Hardware",
    ),
]
WorkloadOpt = Annotated[
    str,
    typer.Option(
        "--workload",
        help="Synthetic workload: sharegpt, arxiv, mixed-v1 (3:1) or mixed-v2 (5:1).",
        rich_help_panel="Workload",
    ),
]
TraceOpt = Annotated[
    Path | None,
    typer.Option(
        "--trace",
        help="Trace CSV (Vidur/Sarathi or Azure format) instead of --workload.",
        rich_help_panel="Workload",
    ),
]
RequestsOpt = Annotated[
    int, typer.Option("--requests", "-n", help="Requests per run.", rich_help_panel="Workload")
]
SeedOpt = Annotated[
    int,
    typer.Option("--seed", help="Seed of lengths, arrivals and noise.", rich_help_panel="Workload"),
]
SloScaleOpt = Annotated[
    float,
    typer.Option("--slo-scale", help="Multiply every SLO by this.", rich_help_panel="Workload"),
]
TiersOpt = Annotated[
    bool,
    typer.Option(
        "--slo-tiers",
        help="QoServe's three SLO tiers instead of per-data-set SLOs.",
        rich_help_panel="Workload",
    ),
]
OutOpt = Annotated[Path, typer.Option("--out", "-o", help="Folder for JSON, CSV and PNG results.")]
WorkersOpt = Annotated[
    int | None, typer.Option("--workers", help="Processes to use (default: one per CPU).")
]
StrictOpt = Annotated[
    bool,
    typer.Option("--strict", help="Check every plan against the invariants; stop on a violation."),
]
PredictorOpt = Annotated[
    Path | None,
    typer.Option(
        "--predictor", help="Latency predictor JSON (default: the hardware's packaged one)."
    ),
]


def _known(kind: str, name: str, known: Sequence[str]) -> None:
    if name not in known:
        from slidingpolicy.errors import UnknownNameError

        raise UnknownNameError(kind, name, tuple(known))


def _base_spec(
    policy: str,
    gpu: str,
    model: str,
    tp: int,
    profile: Path | None,
    workload: str,
    trace: Path | None,
    requests: int,
    seed: int,
    slo_scale: float,
    slo_tiers: bool,
    strict: bool = False,
    predictor: Path | None = None,
    rate: float | None = 1.0,
) -> Any:
    """A checked RunSpec: every name resolved and the workload built once here, so that bad
    input fails with one line before any worker starts."""
    from slidingpolicy.engine import EngineOptions, HardwareSpec, RunSpec, WorkloadSpec
    from slidingpolicy.policies import by_name, names
    from slidingpolicy.workloads import Poisson, TraceTimes, workload_names

    _known("policy", policy, names())
    if trace is None:
        _known("workload", workload, workload_names())
    if requests < 1:
        raise CliError(f"--requests={requests} must be >= 1")
    if profile is not None and not profile.is_file():
        raise CliError(f"--profile {profile}: no such file")
    hardware = HardwareSpec(gpu, model, tp, None if profile is None else str(profile))
    hardware.build()
    arrivals: Any = None
    if rate is not None:
        if not (math.isfinite(rate) and rate > 0):
            raise CliError(f"--rate={rate} must be a finite rate > 0 (requests per second)")
        arrivals = Poisson(rate) if trace is None else TraceTimes(rate)
    elif trace is None:
        raise CliError("a synthetic workload needs --rate")
    spec = RunSpec(
        policy=policy,
        hardware=hardware,
        workload=WorkloadSpec(
            workload, requests, None if trace is None else str(trace), slo_scale, slo_tiers
        ),
        arrivals=arrivals,
        seed=seed,
        options=EngineOptions(strict=strict),
        predictor=None if predictor is None else str(predictor),
    )
    from slidingpolicy.engine.sweep import predictor_of

    by_name(policy, predictor_of(spec))
    spec.workload.build(arrivals, seed)
    return spec


@contextmanager
def _progress(label: str, total: int) -> Iterator[Callable[[int], None]]:
    """A rich progress bar; yields `advance(n)`."""
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=err_console, transient=True) as bar:
        task = bar.add_task(label, total=total)
        yield lambda n: bar.advance(task, n)


def _fmt(value: float | None, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{value:.{digits}f}"


def _pct(value: float) -> str:
    return f"{100 * value:.1f}%"


def _ms(value: float) -> str:
    return "—" if math.isnan(value) else f"{1000 * value:.0f}"


# --- commands ------------------------------------------------------------------------------


@app.command()
def demo(
    out: OutOpt = Path("results"),
    requests: Annotated[int, typer.Option("--requests", "-n", help="Requests per run.")] = 100,
    workers: WorkersOpt = None,
    seed: SeedOpt = 0,
) -> None:
    """Compare every policy on mixed-v1 with the default hardware (qwen2.5-7b, 2× RTX 3090).

    A short rate sweep, then each policy's capacity; a table on screen, JSON, CSV and PNG
    under OUT/demo.
    """
    from slidingpolicy.engine.capacity import capacities
    from slidingpolicy.engine.plots import plot_capacity, plot_sweep
    from slidingpolicy.engine.results import (
        capacity_rows,
        runs_document,
        sweep_rows,
        timings_document,
        write_csv,
        write_json,
    )
    from slidingpolicy.engine.sweep import sweep
    from slidingpolicy.policies import names

    started = time.perf_counter()
    base = _base_spec(
        "slidingserve",
        "rtx3090",
        "qwen2.5-7b",
        2,
        None,
        "mixed-v1",
        None,
        requests,
        seed,
        1.0,
        False,
    )
    policies = list(names())
    rates = [0.5, 1.0, 1.5, 2.0]
    with _progress("rate sweep", len(policies) * len(rates)) as advance:
        runs = sweep(base, policies, rates, workers, on_done=lambda _: advance(1))
    import attrs

    known = [
        [(r.spec.rate, r.metrics.attainment) for r in runs if r.spec.policy == p] for p in policies
    ]
    with _progress("capacity search", len(policies)) as advance:
        found = capacities(
            [attrs.evolve(base, policy=p) for p in policies],
            workers=workers,
            known=known,
            on_done=lambda _: advance(1),
        )
    folder = out / "demo"
    write_json(
        folder / "results.json",
        {**runs_document(runs), "capacity": [c.to_dict() for c in found]},
    )
    write_json(folder / "timings.json", timings_document(runs))
    write_csv(folder / "sweep.csv", sweep_rows(runs))
    write_csv(folder / "capacity.csv", capacity_rows(found))
    plot_sweep(runs, folder / "sweep.png", f"mixed-v1, {requests} requests per run")
    plot_capacity(found, folder / "capacity.png", "capacity on mixed-v1 (qwen2.5-7b, 2× RTX 3090)")
    table = Table(title=f"mixed-v1 on qwen2.5-7b / 2× RTX 3090 — {requests} requests per run")
    table.add_column("policy", no_wrap=True)
    table.add_column("capacity (req/s)", justify="right")
    for rate in rates:
        table.add_column(f"SLO @ {rate:g}/s", justify="right")
    table.add_column(f"p99 TTFT @ {rates[1]:g}/s (s)", justify="right")
    for policy, cap in zip(policies, found, strict=True):
        mine = [r for r in runs if r.spec.policy == policy]
        row = [policy, _fmt(cap.capacity, 2), *(_pct(r.metrics.attainment) for r in mine)]
        table.add_row(*row, _fmt(mine[1].metrics.ttft_p99, 2))
    console.print(table)
    console.print(
        f"results in {folder}/ (results.json, sweep.csv, capacity.csv, sweep.png, capacity.png)"
        f" — {time.perf_counter() - started:.0f} s"
    )


@app.command()
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

    spec = _base_spec(
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
        with _progress(f"{policy}", len(work)) as advance:
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
        ("SLO attainment (every token on time)", _pct(m.attainment)),
        ("TTFT attainment", _pct(m.ttft_attainment)),
        ("TBT attainment (max gap)", _pct(m.tbt_attainment)),
        (
            "TTFT p50 / p90 / p99 (ms)",
            " / ".join(_ms(v) for v in (m.ttft_p50, m.ttft_p90, m.ttft_p99)),
        ),
        ("TBT p50 / p90 / p99 (ms)", " / ".join(_ms(v) for v in (m.tbt_p50, m.tbt_p90, m.tbt_p99))),
        ("throughput (tokens/s)", _fmt(m.token_throughput, 1)),
        ("completed", f"{m.completed}/{m.requests}"),
        ("preemptions", str(m.preemptions)),
        ("predictor MAE (ms)", _ms(m.predictor_mae)),
        ("policy CPU per decision p50 (µs)", _fmt(output.stats.policy_cpu_p50 * 1e6, 0)),
    ):
        table.add_row(name, value)
    console.print(table)
    if output.stalled:
        console.print("[yellow]stalled: some requests could never be scheduled[/yellow]")
    console.print(f"results in {out}/")


def _policies(value: str) -> list[str]:
    from slidingpolicy.policies import names

    chosen = list(names()) if value == "all" else [p.strip() for p in value.split(",") if p.strip()]
    for p in chosen:
        _known("policy", p, names())
    return chosen


def _rates(value: str) -> list[float]:
    try:
        rates = [float(r) for r in value.split(",") if r.strip()]
    except ValueError:
        raise CliError(
            f"--rates {value!r}: expected comma-separated numbers, e.g. 0.5,1,2"
        ) from None
    if not rates or any(not (math.isfinite(r) and r > 0) for r in rates):
        raise CliError(f"--rates {value!r}: every rate must be a finite number > 0")
    return rates


PoliciesOpt = Annotated[
    str, typer.Option("--policy", "-p", help="Comma-separated policy names, or 'all'.")
]


@app.command()
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
    workers: WorkersOpt = None,
    out: OutOpt = Path("results/capacity"),
) -> None:
    """Find each policy's capacity: the highest Poisson rate with ≥99% SLO attainment (2.5%)."""
    import attrs

    from slidingpolicy.engine.capacity import capacities
    from slidingpolicy.engine.plots import plot_capacity
    from slidingpolicy.engine.results import capacity_rows, write_csv, write_json

    chosen = _policies(policy)
    if not (math.isfinite(start) and start > 0):
        raise CliError(f"--start={start} must be a finite rate > 0")
    base = _base_spec(
        chosen[0], gpu, model, tp, profile, workload, None, requests, seed, slo_scale, slo_tiers
    )
    with _progress("capacity search", len(chosen)) as advance:
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
        table.add_row(c.policy, _fmt(c.capacity, 3), str(len(c.trials)))
    console.print(table)
    console.print(f"results in {out}/")


@app.command(name="sweep")
def sweep_command(
    policy: PoliciesOpt = "all",
    rates: Annotated[
        str, typer.Option("--rates", help="Comma-separated Poisson rates (req/s).")
    ] = "0.5,1,1.5,2",
    gpu: GpuOpt = "rtx3090",
    model: ModelOpt = "qwen2.5-7b",
    tp: TpOpt = 2,
    profile: ProfileOpt = None,
    workload: WorkloadOpt = "mixed-v1",
    requests: RequestsOpt = 200,
    seed: SeedOpt = 0,
    slo_scale: SloScaleOpt = 1.0,
    slo_tiers: TiersOpt = False,
    workers: WorkersOpt = None,
    out: OutOpt = Path("results/sweep"),
) -> None:
    """Run policies at several request rates; attainment and tail latency per (policy, rate)."""
    from slidingpolicy.engine.plots import plot_sweep
    from slidingpolicy.engine.results import (
        runs_document,
        sweep_rows,
        timings_document,
        write_csv,
        write_json,
    )
    from slidingpolicy.engine.sweep import sweep

    chosen = _policies(policy)
    rate_list = _rates(rates)
    base = _base_spec(
        chosen[0], gpu, model, tp, profile, workload, None, requests, seed, slo_scale, slo_tiers
    )
    with _progress("sweep", len(chosen) * len(rate_list)) as advance:
        runs = sweep(base, chosen, rate_list, workers, on_done=lambda _: advance(1))
    write_json(out / "results.json", runs_document(runs))
    write_json(out / "timings.json", timings_document(runs))
    write_csv(out / "sweep.csv", sweep_rows(runs))
    plot_sweep(runs, out / "sweep.png", f"{workload}, {requests} requests per run")
    table = Table(title=f"SLO attainment on {workload}")
    table.add_column("policy", no_wrap=True)
    for r in rate_list:
        table.add_column(f"{r:g}/s", justify="right")
    for p in chosen:
        table.add_row(p, *(_pct(r.metrics.attainment) for r in runs if r.spec.policy == p))
    console.print(table)
    console.print(f"results in {out}/")


@app.command()
def profile(
    out: Annotated[Path, typer.Option("--out", "-o", help="Samples file to write (JSONL).")] = Path(
        "samples.jsonl"
    ),
    samples: Annotated[int, typer.Option("--samples", help="Batches to time.")] = 4000,
    gpu: GpuOpt = "rtx3090",
    model: ModelOpt = "qwen2.5-7b",
    tp: TpOpt = 2,
    profile_csv: ProfileOpt = None,
    seed: SeedOpt = 0,
) -> None:
    """Time random batches on a hardware model; write (chunks, contexts, latency) samples."""
    import json

    from slidingpolicy.engine.sweep import HardwareSpec
    from slidingpolicy.predictor.profiling import profile as sample_hardware

    if samples < 1:
        raise CliError(f"--samples={samples} must be >= 1")
    hardware = HardwareSpec(
        gpu, model, tp, None if profile_csv is None else str(profile_csv)
    ).build()
    measured = sample_hardware(hardware, samples, seed)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w") as handle:
        for s in measured:
            handle.write(
                json.dumps(
                    {"chunks": list(s.chunks), "contexts": list(s.contexts), "latency": s.latency}
                )
                + "\n"
            )
    console.print(f"{samples} samples of {hardware.name} in {out}")


def read_samples(path: Path) -> list[Any]:
    """A samples file (JSONL of chunks, contexts, latency); malformed lines name file:line."""
    import json

    from slidingpolicy.predictor import Sample

    if not path.is_file():
        raise CliError(f"{path}: no such samples file")
    found = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            found.append(Sample(data["chunks"], data["contexts"], data["latency"]))
        except (json.JSONDecodeError, KeyError, TypeError, SlidingPolicyError) as error:
            raise CliError(
                f"{path}:{number}: not a sample ({error}); expected "
                '{"chunks": [...], "contexts": [...], "latency": seconds}'
            ) from None
    if not found:
        raise CliError(f"{path}: no samples")
    return found


@app.command()
def fit(
    samples: Annotated[
        Path | None, typer.Option("--samples", help="Samples file from `profile` (JSONL).")
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Write the fitted predictor here (JSON).")
    ] = None,
    holdout: Annotated[
        float, typer.Option("--holdout", help="Fraction of samples held out to measure the error.")
    ] = 0.25,
    gpu: GpuOpt = "rtx3090",
    model: ModelOpt = "qwen2.5-7b",
    tp: TpOpt = 2,
    write_default: Annotated[
        bool,
        typer.Option(
            "--write-default",
            help="Regenerate the packaged default predictor of --hardware/--model/--tp.",
        ),
    ] = False,
    seed: SeedOpt = 0,
) -> None:
    """Calibrate the latency predictor; print MAE, RMSE and R² per scenario on held-out samples."""
    from slidingpolicy.engine.sweep import HardwareSpec
    from slidingpolicy.predictor import evaluate, fit_predictor
    from slidingpolicy.predictor.profiling import (
        DEFAULT_SAMPLES,
    )
    from slidingpolicy.predictor.profiling import (
        profile as sample_hardware,
    )
    from slidingpolicy.predictor.profiling import (
        write_default as write_packaged,
    )

    if not 0.0 < holdout < 1.0:
        raise CliError(f"--holdout={holdout} must be between 0 and 1")
    if write_default:
        path = write_packaged(gpu, model, tp)
        console.print(f"wrote the default predictor {path}")
    hardware = HardwareSpec(gpu, model, tp).build()
    data = (
        read_samples(samples)
        if samples is not None
        else sample_hardware(hardware, DEFAULT_SAMPLES, seed + 1)
    )
    cut = max(1, int(len(data) * (1.0 - holdout)))
    if cut >= len(data):
        raise CliError(f"{len(data)} samples leave none held out")
    predictor = fit_predictor(data[:cut], source=str(samples) if samples else hardware.name)
    if out is not None:
        predictor.save(out)
        console.print(f"wrote {out}")
    table = Table(title=f"held-out error, {len(data) - cut} of {len(data)} samples")
    for column in ("scenario", "samples", "MAE (ms)", "RMSE (ms)", "R²"):
        table.add_column(column, justify="right")
    for report in evaluate(predictor, data[cut:]):
        table.add_row(
            report.scenario,
            str(report.samples),
            f"{1000 * report.mae:.3f}",
            f"{1000 * report.rmse:.3f}",
            f"{report.r2:.4f}",
        )
    console.print(table)


@app.command()
def check(
    log: Annotated[Path, typer.Argument(help="JSONL log of (state, plan) pairs, from any engine.")],
) -> None:
    """Check every plan of a recorded run against the invariants; report, never crash.

    Exit 0 when all plans hold, 1 when some break an invariant, 2 on malformed lines.
    """
    from slidingpolicy.codec import parse_line
    from slidingpolicy.invariants import check_plan

    if not log.is_file():
        raise CliError(f"{log}: no such log file")
    plans = broken = malformed = 0
    with log.open() as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                state, plan, budget = parse_line(line)
            except SlidingPolicyError as error:
                malformed += 1
                print(f"{log}:{number}: malformed: {error}", file=sys.stderr)
                continue
            plans += 1
            violations = check_plan(state, plan, token_budget=budget)
            if violations:
                broken += 1
                for v in violations:
                    print(f"{log}:{number}: t={state.now:.6f}s {v}")
    console.print(
        f"{plans} plans checked: {broken} break an invariant, {malformed} malformed lines"
    )
    if malformed:
        raise typer.Exit(EXIT_BAD_INPUT)
    if broken:
        raise typer.Exit(1)


@app.command()
def policies() -> None:
    """List the registered policies."""
    from slidingpolicy.policies import names

    for name in names():
        console.print(name)


def main(argv: Sequence[str] | None = None) -> None:
    """Run the CLI; bad input → one line on stderr and exit code 2."""
    command = typer.main.get_command(app)
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        code = command.main(args=args, prog_name="slidingpolicy", standalone_mode=False)
    except typer.Exit as done:
        sys.exit(done.exit_code)
    except typer.Abort:
        print("slidingpolicy: aborted", file=sys.stderr)
        sys.exit(130)
    except SlidingPolicyError as error:
        print(f"slidingpolicy: error: {error}", file=sys.stderr)
        sys.exit(EXIT_BAD_INPUT)
    except typer.TyperException as error:
        format_message = getattr(error, "format_message", None)
        message = format_message() if callable(format_message) else str(error)
        print(f"slidingpolicy: error: {' '.join(str(message).split())}", file=sys.stderr)
        sys.exit(EXIT_BAD_INPUT)
    except OSError as error:
        print(f"slidingpolicy: error: {error}", file=sys.stderr)
        sys.exit(EXIT_BAD_INPUT)
    sys.exit(code if isinstance(code, int) else 0)
