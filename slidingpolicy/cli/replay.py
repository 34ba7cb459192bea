"""`slidingpolicy replay`: a workload against a real serving engine, judged as `simulate` judges.

Either `--url` (a server already running, loopback unless `--allow-remote`) or `--launch vllm`
or `--launch transformers` (one server per arm on 127.0.0.1, started from the engine
environment's Python by `replay.launch`, stopped by its process group whatever ends the
command). Every cell of rates × seeds × repeats runs under every arm in turn, the arms' order
rotating (`replay.matrix`).
"""

from __future__ import annotations

import importlib.util
import ipaddress
import math
import re
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import typer
from rich import box
from rich.markup import escape
from rich.table import Table

from slidingpolicy.cli.options import (
    CliError,
    OutOpt,
    SeedOpt,
    SeedsOpt,
    SloScaleOpt,
    TiersOpt,
    TraceOpt,
    WholeOpt,
    WorkloadOpt,
    check_known,
    parse_rates,
    writable_folder,
)
from slidingpolicy.cli.output import command_line, console, fmt, number, progress
from slidingpolicy.cli.plugins import PluginOpt, load_plugins
from slidingpolicy.cli.replay_options import (
    MAX_REPLAY_REQUESTS,
    AllowRemoteOpt,
    KeepServersOpt,
    LabelOpt,
    LaunchOpt,
    RateOpt,
    RatesOpt,
    RepeatsOpt,
    ReplayModelOpt,
    ReplayPoliciesOpt,
    ReplayPredictorOpt,
    ReplayRequestsOpt,
    ServerArgsOpt,
    ShapeOpt,
    StartTimeoutOpt,
    TimeLimitOpt,
    TimeoutOpt,
    TraceDirOpt,
    TransformersPythonOpt,
    UrlOpt,
    VllmPythonOpt,
    WarmupOpt,
)
from slidingpolicy.replay.session import Plan, replay_all, stopped_on_sigterm

if TYPE_CHECKING:
    from slidingpolicy.replay.replay_results import ReplayRun
    from slidingpolicy.replay.targets import Target
    from slidingpolicy.runs.specs import WorkloadSpec

LOOPBACK_NAMES = ("localhost",)

LAG_NOTE = 0.05
"""Seconds of client send lag above which the summary says so."""


def replay(
    context: typer.Context,
    url: UrlOpt = None,
    launch: LaunchOpt = None,
    policies: ReplayPoliciesOpt = "native,sarathi-edf,slidingserve",
    plugin: PluginOpt = None,
    label: LabelOpt = "server",
    model: ReplayModelOpt = None,
    shape: ShapeOpt = None,
    vllm_python: VllmPythonOpt = None,
    transformers_python: TransformersPythonOpt = None,
    server_args: ServerArgsOpt = None,
    predictor: ReplayPredictorOpt = None,
    trace_dir: TraceDirOpt = None,
    keep_servers: KeepServersOpt = True,
    start_timeout: StartTimeoutOpt = 600.0,
    warmup: WarmupOpt = 2,
    allow_remote: AllowRemoteOpt = False,
    workload: WorkloadOpt = "cpu-mixed",
    trace: TraceOpt = None,
    requests: ReplayRequestsOpt = 200,
    rate: RateOpt = None,
    rates: RatesOpt = None,
    seed: SeedOpt = 0,
    seeds: SeedsOpt = 1,
    repeats: RepeatsOpt = 1,
    slo_scale: SloScaleOpt = 1.0,
    slo_tiers: TiersOpt = False,
    whole: WholeOpt = False,
    timeout: TimeoutOpt = 120.0,
    time_limit: TimeLimitOpt = 4 * 3600.0,
    out: OutOpt = Path("results/replay"),
) -> None:
    """Replay a workload against a real serving engine; SLO attainment and latencies per arm.

    Sends each request at its arrival (open loop) to URL/v1/completions: a token-id prompt,
    streaming, max_tokens with ignore_eos, its SLOs in vllm_xargs. Every token is timestamped
    as it arrives and judged by the same per-token deadlines and metrics as `simulate`.
    Failed requests count as misses, by reason. Writes results.json (every run, the command
    and the settings), runs.csv, summary.csv, requests.csv and replay.png under OUT.
    """
    settings = {
        k: (str(v) if isinstance(v, Path) else v) for k, v in locals().items() if k != "context"
    }
    command = command_line(context)
    if (url is None) == (launch is None):
        raise CliError("give either --url (a running server) or --launch ENGINE, not both")
    if importlib.util.find_spec("aiohttp") is None:
        raise CliError("replay needs aiohttp: pip install 'slidingpolicy[replay]'")
    plan = _plan(workload, trace, requests, rate, rates, seed, seeds, repeats, slo_scale,
                 slo_tiers, whole, timeout, time_limit)  # fmt: skip
    writable_folder(out)
    with ExitStack() as stack:
        if url is not None:
            from slidingpolicy.replay.requests import PROMPT_VOCAB
            from slidingpolicy.replay.targets import Target

            targets = [Target(label, _check_url(url, allow_remote), model, None)]
            vocab = PROMPT_VOCAB
        elif launch is not None:
            stack.enter_context(stopped_on_sigterm())
            pythons = {"vllm": vllm_python, "transformers": transformers_python}
            targets, vocab = _launch(
                stack, launch, policies, model, shape, pythons, server_args or [], predictor,
                trace_dir, out, load_plugins(plugin),
            )  # fmt: skip
        invocation = {"command": command, "settings": settings}
        runs, skipped = replay_all(plan, targets, vocab, keep_servers, (start_timeout, warmup),
                                   out, invocation, progress)  # fmt: skip
    _show(runs, skipped, plan, out)


def _plan(
    workload: str,
    trace: Path | None,
    requests: int,
    rate: float | None,
    rates: str | None,
    seed: int,
    seeds: int,
    repeats: int,
    slo_scale: float,
    slo_tiers: bool,
    whole: bool,
    timeout: float,
    time_limit: float,
) -> Plan:
    """The checked workload and matrix: one line and exit 2 for each bad input."""
    from slidingpolicy.replay.matrix import cells
    from slidingpolicy.runs.specs import WorkloadSpec
    from slidingpolicy.workloads import load_trace, workload_names

    if not 1 <= requests <= MAX_REPLAY_REQUESTS:
        raise CliError(f"--requests={requests} must be from 1 to {MAX_REPLAY_REQUESTS:,}")
    for name, value in (("--timeout", timeout), ("--time-limit", time_limit)):
        if not (math.isfinite(value) and value > 0):
            raise CliError(f"{name}={value} must be a finite number of seconds > 0")
    if rate is not None and rates is not None:
        raise CliError("give --rate or --rates, not both")
    chosen: list[float | None] = []
    if rates is not None:
        chosen = list(parse_rates(rates))
    elif rate is not None:
        chosen = list(parse_rates(str(rate)))
    recorded = False
    if trace is None:
        check_known("workload", workload, workload_names())
        if not chosen:
            raise CliError(f"--workload {workload} needs --rate or --rates (requests per second)")
    else:
        held = load_trace(trace)
        if requests > len(held):
            raise CliError(f"--requests={requests} but {trace} holds {len(held)} requests")
        recorded = held.arrivals is not None
        if not chosen and not recorded:
            raise CliError(f"--trace {trace} records no arrival times: give --rate or --rates")
        chosen = chosen or [None]
    spec = WorkloadSpec(workload, requests, None if trace is None else str(trace), slo_scale,
                        slo_tiers, whole=whole)  # fmt: skip
    _check_trial_size(spec, chosen, recorded, seed)
    matrix = cells(chosen, [seed + j for j in range(seeds)], repeats)
    return Plan(spec, recorded, matrix, timeout, time_limit)


def _check_trial_size(
    spec: WorkloadSpec, rates: list[float | None], recorded: bool, seed: int
) -> None:
    """Each rate's trial within the requests a run may send (a steady-state trial's warm-up
    and tail included), or one line saying what would be."""
    from slidingpolicy.replay.matrix import cell_arrivals

    for rate in rates:
        sent = len(spec.build(cell_arrivals(rate, recorded), seed))
        if rate is not None and sent > MAX_REPLAY_REQUESTS:
            raise CliError(
                f"--rate {rate:g}: a steady-state trial of {spec.requests} requests sends "
                f"{sent:,} with its warm-up and tail, over the {MAX_REPLAY_REQUESTS:,} a run may "
                "send: lower the rate, or --whole"
            )


def _check_url(url: str, allow_remote: bool) -> str:
    """The base URL (no trailing /v1/completions); loopback unless `allow_remote`."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise CliError(f"--url {url!r}: expected http://HOST:PORT")
    host = parts.hostname
    try:
        loopback = host in LOOPBACK_NAMES or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback and not allow_remote:
        raise CliError(
            f"--url {url}: {host} is not a loopback address; replay sends requests only to "
            "this machine unless --allow-remote is given"
        )
    return re.sub(r"/(v1(/completions)?/?)?$", "", url.rstrip("/"))


def _launch(
    stack: ExitStack,
    name: str,
    policies: str,
    model: str | None,
    shape: str | None,
    pythons: dict[str, Path | None],
    extra: Sequence[str],
    predictor: Path | None,
    trace_dir: Path | None,
    out: Path,
    plugins: tuple[str, ...],
) -> tuple[list[Target], int]:
    """The targets of `--launch NAME` (`replay.launch`), their servers held by `stack` and
    loading `plugins`, and the model's vocabulary size."""
    from slidingpolicy.replay.launch import Launch, engine_named, launch

    engine = engine_named(name)
    if predictor is not None and not predictor.is_file():
        raise CliError(f"--predictor {predictor}: no such file")
    if trace_dir is not None:
        writable_folder(trace_dir, "--trace-dir")
    folder = None if model is None else Path(model)
    plan = Launch(engine, policies, folder, shape, pythons.get(name), extra, predictor,
                  trace_dir, out, plugins)  # fmt: skip
    return launch(stack, plan)


def _show(
    runs: Sequence[ReplayRun], skipped: Sequence[dict[str, Any]], plan: Plan, out: Path
) -> None:
    """The summary table: per arm and rate, attainment median [min–max] and latencies."""
    from slidingpolicy.replay.replay_results import summary_rows

    rows = summary_rows(runs)
    per = max((row["runs"] for row in rows), default=0)
    table = Table(
        title=f"replayed {plan.spec.label}: {plan.spec.requests} requests a run, "
        f"{per} run{'s' if per != 1 else ''} a setting",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
    )
    table.add_column("arm", overflow="fold")
    for name in ("req/s", "SLO met % median (min–max)", "TTFT ms p50/p99", "TBT ms p50/p99",
                 "tokens/s", "failed"):  # fmt: skip
        table.add_column(name, justify="right", overflow="fold")
    for row in rows:
        low, high = row["attainment_min"], row["attainment_max"]
        table.add_row(
            escape(row["policy"]),
            "recorded" if row["rate"] is None else f"{row['rate']:g}",
            f"{fmt(100 * row['attainment_median'], 1)} ({fmt(100 * low, 1)}–{fmt(100 * high, 1)})",
            f"{number(1000 * row['ttft_p50'])}/{number(1000 * row['ttft_p99'])}",
            f"{number(1000 * row['tbt_p50'])}/{number(1000 * row['tbt_p99'])}",
            fmt(row["token_throughput"], 0),
            f"{row['failed']}/{row['requests']}",
        )
    console.print(table)
    lag = max((r.send_lag for r in runs), default=0.0)
    if lag > LAG_NOTE:
        console.print(
            f"[yellow]the client sent requests up to {1000 * lag:.0f} ms after their arrival "
            "(a busy machine); times count from the arrival, so the lag counts against the "
            "engine[/yellow]"
        )
    if skipped:
        console.print(f"[yellow]{len(skipped)} runs skipped: --time-limit reached[/yellow]")
    if runs:
        from slidingpolicy.replay.paired import paired_wins

        anchor = runs[0].arm
        counts = paired_wins((r.row() for r in runs), anchor)
        if counts:
            pairs = ", ".join(f"{escape(c.arm)} {c.text}" for c in counts)
            console.print(f"paired runs won–tied–lost against {escape(anchor)}: {pairs}")
    console.print(f"results in {out}/ (results.json, runs.csv, summary.csv, requests.csv, "
                  "replay.png)")  # fmt: skip
