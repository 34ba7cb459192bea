"""`slidingpolicy simulate`: one policy on one workload, with its attainment and latencies."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import attrs
import typer
from rich.table import Table

from slidingpolicy.cli.checked_run import CheckedRun, HardwareChoice, WorkloadChoice, run_spec
from slidingpolicy.cli.cluster_options import ClusterChoice
from slidingpolicy.cli.option_sets import CLUSTER, HARDWARE, WORKLOAD, takes
from slidingpolicy.cli.options import (
    CliError,
    OutOpt,
    PredictorOpt,
    StrictOpt,
    writable_file,
    writable_folder,
)
from slidingpolicy.cli.output import can_plot, command_line, console, durations, fmt, pct, progress
from slidingpolicy.cli.plugins import PluginOpt, load_plugins

if TYPE_CHECKING:
    from slidingpolicy.cluster import ClusterSpec, ClusterStats
    from slidingpolicy.engine.run_types import RunOutput
    from slidingpolicy.engine.timeline import Timeline
    from slidingpolicy.metrics import Metrics


@takes(HARDWARE, WORKLOAD, CLUSTER)
def simulate(
    context: typer.Context,
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
    *,
    hardware: HardwareChoice,
    workload: WorkloadChoice,
    cluster: ClusterChoice,
    strict: StrictOpt = None,
    predictor: PredictorOpt = None,
    plugin: PluginOpt = None,
    log: Annotated[
        Path | None,
        typer.Option(
            "--log",
            help="Write every step as a JSONL step trace (state, plan, the batch that ran, its "
            "latency), for `check` and `fit --trace`.",
        ),
    ] = None,
    timeline: Annotated[
        Path | None,
        typer.Option(
            "--timeline",
            help="Write the run's iterations as a Chrome/Perfetto trace (JSON): a track per "
            "request (queued, prefill chunks, decodes, deadline misses) and one of batches with "
            "their predicted and actual latency. Open it in ui.perfetto.dev or chrome://tracing.",
        ),
    ] = None,
    out: OutOpt = Path("results/simulate"),
) -> None:
    """Run one policy on one workload and print its SLO attainment and latencies.

    Writes results.json, timings.json, requests.csv (one row per request: data set, tier,
    arrival, lengths, SLOs and outcome) and requests.png under OUT; with --timeline, the
    run's iterations as a trace for Perfetto. With --replicas or --router, the policy runs on
    every replica of a cluster behind the router, and --rate is the cluster's.
    """
    load_plugins(plugin)
    (chosen,) = cluster.clusters([policy], several=False)
    if chosen is not None and (log is not None or timeline is not None):
        raise CliError("--log and --timeline record one engine's steps: not with a cluster")
    writable_folder(out)
    if log is not None:
        writable_file(log, "--log")
    if timeline is not None:
        writable_file(timeline, "--timeline")
    checked = run_spec(
        policy, hardware, attrs.evolve(workload, rate=rate), strict, predictor, chosen
    )
    recorder = None
    if timeline is not None:
        from slidingpolicy.engine.timeline import Timeline

        recorder = Timeline(checked.workload)
    label = checked.spec.label
    routed: ClusterStats | None = None
    if chosen is None:
        output = run_checked(checked, policy, log, recorder)
    else:
        output, routed = run_cluster(checked, chosen, label)
    if recorder is not None and timeline is not None:
        recorder.write(timeline, f"{policy} on {checked.spec.workload.label}")
    write_results(out, checked, output, label, command_line(context), routed)
    print_metrics(
        output,
        f"{label} on {checked.spec.workload.label}, {checked.spec.workload.requests} requests",
    )
    if routed is not None:
        console.print(routing_line(routed), markup=False, highlight=False)
    from slidingpolicy.runs.drain import drain_note
    from slidingpolicy.workloads.steady_state import trial_text

    console.print(trial_text(checked.workload), markup=False, highlight=False)
    note = drain_note("this run", output.metrics)
    if note is not None:
        console.print(note, markup=False, highlight=False)
    if output.stalled:
        console.print("[yellow]stalled: some requests could never be scheduled[/yellow]")
    console.print(f"results in {out}/")


def run_checked(
    checked: CheckedRun, label: str, log: Path | None, timeline: Timeline | None = None
) -> RunOutput:
    """Simulate the checked run, with a progress bar, writing every step to `log` (a step
    trace, `slidingpolicy.step_trace`) and telling `timeline` every iteration."""
    from slidingpolicy._io import replace_atomically
    from slidingpolicy.engine.simulator import simulate as run_engine

    spec = checked.spec
    with ExitStack() as stack:
        on_step = None
        if log is not None:
            handle = stack.enter_context(stack.enter_context(replace_atomically(log)).open("w"))

            def on_step(step: Any) -> None:
                handle.write(step.to_line() + "\n")

        with progress(f"{label}", len(checked.workload.counted)) as advance:
            return run_engine(
                checked.policy,
                checked.workload,
                checked.hardware,
                spec.seed,
                spec.options,
                progress=advance,
                on_step=on_step,
                timeline=timeline,
            )


def run_cluster(
    checked: CheckedRun, cluster: ClusterSpec, label: str
) -> tuple[RunOutput, ClusterStats]:
    """Simulate the checked run on `cluster`, with a progress bar."""
    from slidingpolicy.cluster import simulate_cluster
    from slidingpolicy.policies import by_name
    from slidingpolicy.runs.specs import predictor_of

    spec = checked.spec
    predictor = predictor_of(spec)
    options = dict(spec.policy_options)
    policies = [by_name(spec.policy, predictor, **options) for _ in range(cluster.replicas)]
    with progress(label, len(checked.workload.counted)) as advance:
        ran = simulate_cluster(
            policies,
            checked.workload,
            checked.hardware,
            spec.seed,
            cluster,
            predictor,
            spec.options,
            progress=advance,
        )
    return ran.run, ran.cluster


def routing_line(routed: ClusterStats) -> str:
    """What the router did: requests per replica, early notices and requests routed again."""
    counts = ", ".join(str(c) for c in routed.routed)
    return (
        f"routed to each replica: {counts}; early notices: {routed.notices}; routed again "
        f"after a give-up: {routed.retries}"
    )


def write_results(
    out: Path,
    checked: CheckedRun,
    output: RunOutput,
    label: str,
    command: list[str],
    routed: ClusterStats | None = None,
) -> None:
    """results.json (with `command` in its provenance, and what the router did on a cluster),
    timings.json, requests.csv and requests.png under `out`."""
    from slidingpolicy.runs import results

    spec, work, m = checked.spec, checked.workload, output.metrics
    rows = results.request_rows(work, output.outcome)
    results.write_results(
        out / "results.json",
        {
            "spec": spec.to_dict(),
            "metrics": m.to_dict(),
            "stalled": output.stalled,
            "end": output.end,
            "window": None if work.window is None else work.window.to_dict(),
            "requests": rows,
            **({} if routed is None else {"cluster": routed.to_dict()}),
        },
        command,
    )
    results.write_json(out / "timings.json", output.stats.to_dict())
    results.write_csv(out / "requests.csv", rows)
    if not can_plot():
        return
    import numpy as np

    from slidingpolicy.figures.plots import plot_requests

    counted = np.array(work.counted, dtype=np.int64)
    plot_requests(
        work.measured(),
        output.outcome.of(counted),
        out / "requests.png",
        f"{label} on {Path(spec.workload.label).name}, {spec.workload.requests} requests, "
        f"{checked.hardware.name}\n{pct(m.attainment)} met their SLO",
    )


ATTAINMENT_NOTES = (
    "SLO: the request's every token, the first included, came by its deadline "
    "a + L_ttft + (k − 1)·L_tbt (eq. 1). A token ahead of its deadline banks slack for the "
    "next, so a gap longer than L_tbt can still meet every deadline.",
    "TTFT: the first token came within L_ttft of arrival.",
    "max gap: no gap between two tokens of the request was longer than L_tbt; stricter than "
    "the SLO, so it can be far lower than SLO attainment without contradicting it.",
    "goodput: requests that met their SLO per second of the run (vllm bench serve's request "
    "goodput); `capacity` finds the highest rate at which 99% meet it.",
    "latencies: mean, median, standard deviation and nearest-rank p90/p99; TTFT over "
    "requests that produced a token, TPOT = (last token − first token) / (tokens − 1) and "
    "E2E = last token − arrival over completed requests, ITL over every gap between tokens.",
    "late requests: those whose first token missed its TTFT deadline; their TTFT p99 and "
    "max are what a request waited that a policy served late (- when none was).",
)
"""What each attainment and latency on screen means (`slidingpolicy.metrics`), printed under
them."""


def metrics_table(output: RunOutput, title: str) -> Table:
    """The run's attainments, goodput, throughput and engine figures, one per row."""
    m = output.metrics
    table = Table(title=title)
    table.add_column("metric")
    table.add_column("value", justify="right")
    mae_unit, (mae,) = durations([m.predictor_mae])
    late_unit, late = durations([m.late_ttft_p99, m.late_ttft_max])
    given_up = [("given up (finished unserved: give_up_after)", str(m.given_up))] * (m.given_up > 0)
    for name, value in (
        ("SLO attainment (every token by its deadline)¹", pct(m.attainment)),
        ("TTFT attainment²", pct(m.ttft_attainment)),
        ("max-gap TBT attainment (no gap above L_tbt)³", pct(m.tbt_attainment)),
        ("goodput (req/s that met their SLO)⁴", fmt(m.goodput, 3)),
        (f"TTFT of late requests p99 / max ({late_unit})⁶", " / ".join(late)),
        ("throughput (tokens/s)", fmt(m.token_throughput, 1)),
        ("completed", f"{m.completed}/{m.requests}"),
        *given_up,
        ("preemptions", str(m.preemptions)),
        (f"predictor MAE ({mae_unit})", mae),
        ("policy CPU per decision p50 (µs)", fmt(output.stats.policy_cpu_p50 * 1e6, 0)),
    ):
        table.add_row(name, value)
    return table


def latency_table(metrics: Metrics) -> Table:
    """Mean, median, std, p90 and p99 of TTFT, TPOT, ITL and E2E, each row in the unit that
    reads for it."""
    from slidingpolicy.metrics import LATENCIES, STAT_NAMES

    table = Table(title="latencies⁵")
    table.add_column("latency")
    table.add_column("unit")
    for stat in STAT_NAMES:
        table.add_column(stat, justify="right")
    for key, name in LATENCIES.items():
        unit, shown = durations(attrs.astuple(metrics.stats(key)))
        table.add_row(name, unit, *shown)
    return table


def print_metrics(output: RunOutput, title: str) -> None:
    """Both tables, then what each number means."""
    console.print(metrics_table(output, title))
    console.print(latency_table(output.metrics))
    for mark, note in zip("¹²³⁴⁵⁶", ATTAINMENT_NOTES, strict=True):
        console.print(f"{mark} {note}", markup=False, highlight=False)
