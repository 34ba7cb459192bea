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
import signal
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Annotated, Any
from urllib.parse import urlsplit

import attrs
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
    WorkloadOpt,
    check_known,
    parse_rates,
    writable_folder,
)
from slidingpolicy.cli.output import command_line, console, fmt, number, progress
from slidingpolicy.cli.plugins import PluginOpt, load_plugins

if TYPE_CHECKING:
    from slidingpolicy.replay.matrix import Cell
    from slidingpolicy.replay.replay_results import ReplayRun
    from slidingpolicy.replay.targets import Target
    from slidingpolicy.runs.specs import WorkloadSpec
    from slidingpolicy.workloads import Workload

MAX_REPLAY_REQUESTS = 100_000
"""The most requests one replayed run may send: the client holds one open stream each."""

LOOPBACK_NAMES = ("localhost",)

LAG_NOTE = 0.05
"""Seconds of client send lag above which the summary says so."""


@attrs.frozen(slots=True)
class Plan:
    """What to replay, checked: the workload, the matrix, the request and overall bounds."""

    spec: WorkloadSpec
    recorded_times: bool
    cells: tuple[Cell, ...]
    timeout: float
    time_limit: float


def replay(
    context: typer.Context,
    url: Annotated[
        str | None,
        typer.Option(
            "--url",
            help="Base URL of a running OpenAI-compatible server (e.g. http://127.0.0.1:8000); "
            "requests go to URL/v1/completions.",
            rich_help_panel="Engine",
        ),
    ] = None,
    launch: Annotated[
        str | None,
        typer.Option(
            "--launch",
            help="Start the engine here instead, one server per arm on 127.0.0.1: 'vllm' or "
            "'transformers' (its continuous batching).",
            rich_help_panel="Engine",
        ),
    ] = None,
    policies: Annotated[
        str,
        typer.Option(
            "--policies",
            "-p",
            help="With --launch: the arms, comma-separated: the engine's own schedulers "
            "('native'; with transformers also 'prefill_first') and policies, with options "
            "as name[key=value,...].",
            rich_help_panel="Engine",
        ),
    ] = "native,sarathi-edf,slidingserve",
    plugin: PluginOpt = None,
    label: Annotated[
        str,
        typer.Option(
            "--label", help="With --url: the arm's name in the results.", rich_help_panel="Engine"
        ),
    ] = "server",
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            help="With --launch: a model folder (a config.json is enough; weights are dummy), "
            "instead of --shape. With --url: the model name to ask for (default: the first "
            "the server lists).",
            rich_help_panel="Engine",
        ),
    ] = None,
    shape: Annotated[
        str | None,
        typer.Option(
            "--shape",
            help="With --launch: a packaged model shape, opt-small (vllm's default: steps of "
            "tens of ms on a CPU), opt-tiny, qwen2-small (transformers' default: the same "
            "on a CPU), qwen2-tiny, or qwen2.5-7b (for a GPU).",
            rich_help_panel="Engine",
        ),
    ] = None,
    vllm_python: Annotated[
        Path | None,
        typer.Option(
            "--vllm-python",
            envvar="SLIDINGPOLICY_VLLM_PYTHON",
            help="With --launch vllm: the Python of the environment holding vLLM and "
            "slidingpolicy-vllm.",
            rich_help_panel="Engine",
        ),
    ] = None,
    transformers_python: Annotated[
        Path | None,
        typer.Option(
            "--transformers-python",
            envvar="SLIDINGPOLICY_TRANSFORMERS_PYTHON",
            help="With --launch transformers: the Python of the environment holding "
            "transformers and slidingpolicy-transformers[serve].",
            rich_help_panel="Engine",
        ),
    ] = None,
    server_args: Annotated[
        list[str] | None,
        typer.Option(
            "--server-arg",
            help="With --launch: one more argument for every arm's server (repeat the option), "
            "e.g. --server-arg=--max-num-batched-tokens=1024 (vllm), "
            "--server-arg=--num-blocks=4096 (transformers).",
            rich_help_panel="Engine",
        ),
    ] = None,
    predictor: Annotated[
        Path | None,
        typer.Option(
            "--predictor",
            help="With --launch: the latency predictor JSON the policy arms price batches with "
            "(default: the adapter's packaged one).",
            rich_help_panel="Engine",
        ),
    ] = None,
    trace_dir: Annotated[
        Path | None,
        typer.Option(
            "--trace-dir",
            help="With --launch: each policy arm writes its per-step trace to DIR/ARM.jsonl "
            "(for `check` and calibration).",
            rich_help_panel="Engine",
        ),
    ] = None,
    keep_servers: Annotated[
        bool,
        typer.Option(
            "--keep-servers/--restart-servers",
            metavar=" ",
            help="With --launch: keep every arm's server running for the whole matrix (one "
            "start each; ~3 GB each with vllm and opt-small), or start and stop one per run.",
            rich_help_panel="Engine",
        ),
    ] = True,
    start_timeout: Annotated[
        float,
        typer.Option(
            "--start-timeout",
            help="Seconds a launched server has to answer /health.",
            rich_help_panel="Engine",
        ),
    ] = 600.0,
    warmup: Annotated[
        int,
        typer.Option(
            "--warmup",
            min=0,
            help="Requests sent to each server before measuring.",
            rich_help_panel="Engine",
        ),
    ] = 2,
    allow_remote: Annotated[
        bool,
        typer.Option(
            "--allow-remote",
            metavar=" ",
            help="Allow a --url that is not a loopback address.",
            rich_help_panel="Engine",
        ),
    ] = False,
    workload: WorkloadOpt = "cpu-mixed",
    trace: TraceOpt = None,
    requests: Annotated[
        int,
        typer.Option(
            "--requests",
            "-n",
            help=f"Requests per run (at most {MAX_REPLAY_REQUESTS:,}).",
            rich_help_panel="Workload",
        ),
    ] = 200,
    rate: Annotated[
        float | None,
        typer.Option(
            "--rate",
            "-r",
            help="Poisson arrival rate (req/s); with a --trace that records times, rescales "
            "them to this mean rate (without it they are replayed as recorded).",
            rich_help_panel="Workload",
        ),
    ] = None,
    rates: Annotated[
        str | None,
        typer.Option(
            "--rates", help="Comma-separated rates instead of --rate.", rich_help_panel="Workload"
        ),
    ] = None,
    seed: SeedOpt = 0,
    seeds: SeedsOpt = 1,
    repeats: Annotated[
        int,
        typer.Option(
            "--repeats",
            min=1,
            max=100,
            help="Runs of each (rate, seed) per arm.",
            rich_help_panel="Workload",
        ),
    ] = 1,
    slo_scale: SloScaleOpt = 1.0,
    slo_tiers: TiersOpt = False,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout",
            help="Seconds a request may take from its send to its last token; later, it is "
            "cancelled and counted as failed.",
        ),
    ] = 120.0,
    time_limit: Annotated[
        float,
        typer.Option(
            "--time-limit",
            help="Seconds the whole replay may take; runs that would start later are skipped "
            "(and listed).",
        ),
    ] = 4 * 3600.0,
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
                 slo_tiers, timeout, time_limit)  # fmt: skip
    writable_folder(out)
    runs: list[ReplayRun] = []
    skipped: list[dict[str, Any]] = []
    with ExitStack() as stack:
        if url is not None:
            from slidingpolicy.replay.requests import PROMPT_VOCAB
            from slidingpolicy.replay.targets import Target

            targets = [Target(label, _check_url(url, allow_remote), model, None)]
            vocab = PROMPT_VOCAB
        elif launch is not None:
            stack.enter_context(_stopped_on_sigterm())
            pythons = {"vllm": vllm_python, "transformers": transformers_python}
            targets, vocab = _launch(
                stack, launch, policies, model, shape, pythons, server_args or [], predictor,
                trace_dir, out, load_plugins(plugin),
            )  # fmt: skip
        try:
            _run_matrix(plan, targets, vocab, keep_servers, (start_timeout, warmup), runs, skipped)
        finally:
            if runs:
                _write(
                    out, plan, runs, skipped, {"command": command, "settings": settings}, targets
                )
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
                        slo_tiers)  # fmt: skip
    matrix = cells(chosen, [seed + j for j in range(seeds)], repeats)
    return Plan(spec, recorded, matrix, timeout, time_limit)


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


@contextmanager
def _stopped_on_sigterm() -> Iterator[None]:
    """SIGTERM ends the command as Ctrl-C does, so that the servers it holds are stopped."""

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


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


def _run_matrix(
    plan: Plan,
    targets: Sequence[Target],
    vocab: int,
    keep: bool,
    start: tuple[float, int],
    runs: list[ReplayRun],
    skipped: list[dict[str, Any]],
) -> None:
    """Every cell under every target, interleaved, appending each run to `runs` as it ends
    (what ran is kept if a later run fails) and each run skipped for time to `skipped`;
    `start` is the servers' start timeout and warm-up count."""
    from slidingpolicy.replay.matrix import interleaved

    started = time.monotonic()
    start_timeout, warmup = start
    if keep:
        _start_all(targets, start_timeout, warmup, plan.timeout)
    schedule = interleaved(plan.cells, targets)
    workloads: dict[Cell, Workload] = {}
    with progress("replay", len(schedule) * plan.spec.requests) as ticker:
        for cell, target in schedule:
            if time.monotonic() - started > plan.time_limit:
                skipped.append({"policy": target.label, **attrs.asdict(cell)})
                continue
            ticker.note(f"{target.label} at {_rate_text(cell.rate)}")
            if not keep:
                target.ready(start_timeout, warmup, plan.timeout)
            if cell not in workloads:
                workloads[cell] = _workload(plan, cell)
            runs.append(_run_one(plan, target, cell, workloads[cell], vocab, ticker))
            if not keep:
                target.stop()


def _start_all(targets: Sequence[Target], timeout: float, warmup: int, request: float) -> None:
    """Start every launched server at once, then make each ready in turn."""
    for target in targets:
        if target.server is not None and not target.server.alive():
            target.server.start()
            target.starts += 1
    for target in targets:
        if target.server is not None:
            target.server.wait_ready(timeout)
        target.ready(timeout, warmup, request)


def _workload(plan: Plan, cell: Cell) -> Workload:
    """The cell's requests: Poisson at its rate, or the trace's times (rescaled to its rate)."""
    from slidingpolicy.replay.matrix import cell_arrivals

    return plan.spec.build(cell_arrivals(cell.rate, plan.recorded_times), cell.seed)


def _run_one(
    plan: Plan, target: Target, cell: Cell, workload: Workload, vocab: int, ticker: Any
) -> ReplayRun:
    """Replay the cell's workload against `target` and judge it."""
    import asyncio

    from slidingpolicy.replay.client import send_all
    from slidingpolicy.replay.measure import failures, judge, send_lag
    from slidingpolicy.replay.replay_results import ReplayRun
    from slidingpolicy.replay.requests import completions

    sent = completions(workload, (cell.seed, cell.repeat), vocab)
    with target.measuring() as model:
        began = time.monotonic()
        measured = asyncio.run(
            send_all(target.url, model, sent, plan.timeout, on_done=lambda _: ticker(1))
        )
        wall = time.monotonic() - began
    metrics, outcome = judge(workload, measured)
    return ReplayRun(
        target.label,
        cell,
        plan.spec,
        workload,
        tuple(measured),
        metrics,
        outcome,
        failures(measured),
        wall,
        send_lag(workload, measured),
    )


def _rate_text(rate: float | None) -> str:
    return "recorded times" if rate is None else f"{rate:g}/s"


def _write(
    out: Path,
    plan: Plan,
    runs: Sequence[ReplayRun],
    skipped: Sequence[dict[str, Any]],
    invocation: dict[str, Any],
    targets: Sequence[Target],
) -> None:
    """results.json (with `invocation`: the command line and its settings), runs.csv,
    summary.csv, requests.csv and replay.png under `out`."""
    from slidingpolicy.replay.replay_results import plot_replay, summary_rows
    from slidingpolicy.runs.results import write_csv, write_json

    write_json(
        out / "results.json",
        {
            **invocation,
            "targets": [t.to_dict() for t in targets],
            "summary": summary_rows(runs),
            "runs": [r.to_dict() for r in runs],
            "skipped": list(skipped),
        },
    )
    write_csv(out / "runs.csv", [r.row() for r in runs])
    write_csv(out / "summary.csv", summary_rows(runs))
    write_csv(
        out / "requests.csv", [{**r.label(), **row} for r in runs for row in r.request_rows()]
    )
    if runs:
        title = f"{plan.spec.label}, {plan.spec.requests} requests per run, replayed"
        plot_replay(runs, out / "replay.png", title)


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
