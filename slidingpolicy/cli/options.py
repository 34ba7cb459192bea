"""What the commands share: option types, input errors, and the checks and parsers of input."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

from slidingpolicy.errors import SlidingPolicyError
from slidingpolicy.workloads.arrivals import MAX_RATE, MIN_RATE, RATE_RANGE
from slidingpolicy.workloads.steady_state import WARMUP_SLOS

EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130
MAX_REQUESTS = 1_000_000
"""The most requests one run may simulate: about `BYTES_PER_REQUEST` each, so ≈ 8.2 GB."""
BYTES_PER_REQUEST = 8_200
"""Peak memory of `simulate` per request, at worst. Measured, peak RSS at 100,000 requests
(default hardware, slidingserve): 665 MB on arxiv and 696 MB on sharegpt at 1 req/s, 820 MB
on mixed-v1 at 10 req/s, ten times its capacity (the queue then holds most requests)."""
TRIAL_REQUESTS = 1000
"""Requests per capacity trial by default. On mixed-v1 (default hardware, 10 seeds) the mean
capacity at 1000 requests equals that at 3000 within 3% for every policy measured, and the
ranking is the same; shorter trials spread far more (100 requests: 0.8–2.0 req/s over three
seeds for sarathi-edf) and 200 tie qoserve with slidingserve (docs/decisions.md)."""
TRIAL_SEEDS = 3
"""Seeds per capacity search by default: one seed of 1000 requests still spreads ±15%."""
DEFAULT_RATE = 1.0
"""The Poisson rate (req/s) when --rate is not given and there are no recorded times."""


class CliError(SlidingPolicyError):
    """A bad command-line argument the parser could not catch."""


GpuOpt = Annotated[
    str,
    typer.Option(
        "--hardware",
        help="GPU and latency model: rtx3090, a100-80g or h100 (smooth roofline), "
        "<gpu>-quantized (tile-quantized roofline), a100-80g-measured (packaged measured "
        "profile, llama3-8b).",
        rich_help_panel="Hardware",
    ),
]
ModelOpt = Annotated[
    str, typer.Option("--model", help="Model: qwen2.5-7b or llama3-8b.", rich_help_panel="Hardware")
]
TpOpt = Annotated[
    int, typer.Option("--tp", min=1, help="Tensor-parallel GPUs.", rich_help_panel="Hardware")
]
ProfileOpt = Annotated[
    Path | None,
    typer.Option(
        "--profile",
        help="Measured per-operator timings (Vidur profiling CSV) to use instead of the roofline.",
        rich_help_panel="Hardware",
    ),
]
HardwareTraceOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--hardware-trace",
        help="A real engine's step trace (JSONL: each step's batch and measured latency, as the "
        "vLLM adapter's trace or `simulate --log` writes it): run on that engine's measured "
        "latency and noise instead of --hardware/--model/--tp. Repeat for several traces.",
        rich_help_panel="Hardware",
    ),
]
KvTokensOpt = Annotated[
    int | None,
    typer.Option(
        "--kv-tokens",
        min=16,
        help="KV cache size in tokens (default: the hardware model's; with --hardware-trace, "
        "unlimited: give the engine's own, e.g. vLLM's 'KV cache size: N tokens').",
        rich_help_panel="Hardware",
    ),
]
WorkloadOpt = Annotated[
    str,
    typer.Option(
        "--workload",
        help="Synthetic workload: sharegpt, arxiv, mixed-v1 (3:1), mixed-v2 (5:1), or "
        "cpu-mixed (short chat and documents 7:3, sized for a CPU engine).",
        rich_help_panel="Workload",
    ),
]
TraceOpt = Annotated[
    Path | None,
    typer.Option(
        "--trace",
        help="Trace CSV (Vidur/Sarathi or Azure format) instead of --workload, read once (a "
        "pipe or /dev/stdin works). Its recorded arrival times are replayed, or rescaled to a "
        "rate: t_i · (n − 1) / (t_{n−1} · rate), the same pattern at that mean rate; a trace "
        "without times arrives as a Poisson process at the rate.",
        rich_help_panel="Workload",
    ),
]


def requests_option(default: int, per: str = "run") -> Any:
    """--requests, whose default is `default` requests per `per`, or the whole --trace."""
    return typer.Option(
        "--requests",
        "-n",
        show_default=False,
        help=f"Requests per {per} [default: {default}, or every request of a --trace] "
        f"(at most {MAX_REQUESTS:,}): those it counts, at a constant rate after a warm-up "
        "and with arrivals going on behind them (see --whole).",
        rich_help_panel="Workload",
    )


WholeOpt = Annotated[
    bool,
    typer.Option(
        "--whole",
        metavar=" ",
        help="Count every request of a finite trial, the first ones meeting an empty engine "
        "and the last ones served as the queue drains, instead of a steady-state trial: at a "
        f"constant rate, -n counted requests after a warm-up of {WARMUP_SLOS} shortest TTFT "
        "SLOs, arrivals going on until they finish (docs/engine.md, steady-state trials). A "
        "burst or a trace's own times are always a finite trial.",
        rich_help_panel="Workload",
    ),
]


RequestsOpt = Annotated[int | None, requests_option(300)]
TrialRequestsOpt = Annotated[int | None, requests_option(TRIAL_REQUESTS, "trial")]
SeedsOpt = Annotated[
    int,
    typer.Option(
        "--seeds",
        min=1,
        max=100,
        help="Seeds per policy (SEED, SEED+1, ...): the mean and min–max are reported.",
        rich_help_panel="Workload",
    ),
]
SeedOpt = Annotated[
    int,
    typer.Option(
        "--seed", min=0, help="Seed of lengths, arrivals and noise.", rich_help_panel="Workload"
    ),
]
SloScaleOpt = Annotated[
    float,
    typer.Option("--slo-scale", help="Multiply every SLO by this.", rich_help_panel="Workload"),
]
TiersOpt = Annotated[
    bool,
    typer.Option(
        "--slo-tiers/--no-slo-tiers",
        metavar=" ",
        help="QoServe's three SLO tiers instead of per-data-set SLOs.",
        rich_help_panel="Workload",
    ),
]
OutOpt = Annotated[Path, typer.Option("--out", "-o", help="Folder for JSON, CSV and PNG results.")]


def cap_workers(workers: int | None) -> int | None:
    """--workers, at most one per CPU this process may use; a note on stderr when capped."""
    from slidingpolicy.cli.output import err_console
    from slidingpolicy.runs.workers import default_workers

    cores = default_workers()
    if workers is None or workers <= cores:
        return workers
    err_console.print(
        f"[yellow]--workers {workers}: this process may use {cores} CPUs; running {cores} "
        "workers[/yellow]"
    )
    return cores


WorkersOpt = Annotated[
    int | None,
    typer.Option(
        "--workers",
        min=1,
        callback=cap_workers,
        help="Processes to use (default and most: one per CPU).",
    ),
]
RayOpt = Annotated[
    str | None,
    typer.Option(
        "--ray",
        metavar="ADDRESS",
        help="Run the trials on the Ray cluster at ADDRESS instead of local processes: auto "
        "(this machine's cluster), local (a new Ray instance here), HOST:PORT or "
        "ray://HOST:PORT. Needs pip install 'slidingpolicy[ray]'; results are the same.",
    ),
]
StrictOpt = Annotated[
    bool | None,
    typer.Option(
        "--strict/--no-strict",
        metavar=" ",
        help="Check every plan against the invariants and stop on a violation, naming it "
        "(exit 2), or never check. Default: the plans of a policy of your own are checked, "
        "ours (proved by the test suite) are not.",
        show_default=False,
    ),
]
PredictorOpt = Annotated[
    Path | None,
    typer.Option(
        "--predictor",
        help="Latency predictor JSON (default: the hardware's own, packaged or fitted once "
        "and cached). SlidingServe's configurations learn online from it as their prior "
        "unless given learn=false.",
    ),
]
PoliciesOpt = Annotated[
    str,
    typer.Option(
        "--policy",
        "-p",
        help="Comma-separated policies, or 'all'; options as name[key=value,...], "
        "e.g. sarathi-edf[token_budget=768]; slidingserve+[learn=false] is the reference "
        "without online learning.",
    ),
]


def check_known(kind: str, name: str, known: Sequence[str]) -> None:
    """Raise UnknownNameError, which lists the known names, when `name` is not one of them."""
    if name not in known:
        from slidingpolicy.errors import UnknownNameError

        raise UnknownNameError(kind, name, tuple(known))


def check_requests(requests: int) -> None:
    """--requests: 1 to MAX_REQUESTS, with the memory a larger run would need."""
    if requests < 1:
        raise CliError(f"--requests={requests} must be >= 1")
    if requests > MAX_REQUESTS:
        need = requests * BYTES_PER_REQUEST / 1e9
        raise CliError(
            f"--requests={requests:,} is above the limit of {MAX_REQUESTS:,}: a run holds about "
            f"{BYTES_PER_REQUEST / 1000:.1f} KB per request, {need:,.1f} GB for this one"
        )


def writable_folder(folder: Path, option: str = "--out") -> None:
    """Fail now, before any computation, if results cannot be written under `folder`."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as error:
        raise CliError(f"{option} {folder}: cannot write there ({error.strerror})") from None


def writable_file(path: Path, option: str) -> None:
    """Fail now if the file `path` cannot be written (its folder, or `path` a folder)."""
    if path.is_dir():
        raise CliError(f"{option} {path}: is a directory; give a file name")
    writable_folder(path.parent, option)


def parse_policies(value: str) -> list[str]:
    """The policies of a --policy value: comma-separated labels (a name, or
    name[key=value,...] with its options), or 'all'; each checked by building it."""
    from slidingpolicy.policies import by_name, names
    from slidingpolicy.policies.labels import label, parse_label, split_labels
    from slidingpolicy.predictors import default_predictor

    chosen = list(names()) if value == "all" else split_labels(value)
    if not chosen:
        raise CliError(f"--policy {value!r}: name at least one policy, or 'all'")
    labels = []
    for text in chosen:
        name, options = parse_label(text)
        check_known("policy", name, names())
        by_name(name, default_predictor(), **dict(options))
        labels.append(label(name, options))
    if len(set(labels)) < len(labels):
        raise CliError(f"--policy {value!r}: a policy is named twice")
    return labels


def parse_rates(value: str) -> list[float]:
    """The rates of a --rates value: comma-separated finite numbers > 0."""
    try:
        rates = [float(r) for r in value.split(",") if r.strip()]
    except ValueError:
        raise CliError(
            f"--rates {value!r}: expected comma-separated numbers, e.g. 0.5,1,2"
        ) from None
    if not rates or not all(within_rates(r) for r in rates):
        raise CliError(f"--rates {value!r}: every rate must be {RATE_RANGE}")
    return rates


def within_rates(rate: float) -> bool:
    """Whether `rate` lies within the arrival rates a workload can have (`RATE_RANGE`)."""
    return MIN_RATE <= rate <= MAX_RATE
