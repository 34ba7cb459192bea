"""The options of `slidingpolicy replay` that no other command takes, declared once."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

MAX_REPLAY_REQUESTS = 100_000
"""The most requests one replayed run may send: the client holds one open stream each."""

UrlOpt = Annotated[
    str | None,
    typer.Option(
        "--url",
        help="Base URL of a running OpenAI-compatible server (e.g. http://127.0.0.1:8000); "
        "requests go to URL/v1/completions.",
        rich_help_panel="Engine",
    ),
]

LaunchOpt = Annotated[
    str | None,
    typer.Option(
        "--launch",
        help="Start the engine here instead, one server per arm on 127.0.0.1: 'vllm' or "
        "'transformers' (its continuous batching).",
        rich_help_panel="Engine",
    ),
]

ReplayPoliciesOpt = Annotated[
    str,
    typer.Option(
        "--policies",
        "-p",
        help="With --launch: the arms, comma-separated: the engine's own schedulers "
        "('native'; with transformers also 'prefill_first') and policies, with options "
        "as name[key=value,...].",
        rich_help_panel="Engine",
    ),
]

LabelOpt = Annotated[
    str,
    typer.Option(
        "--label", help="With --url: the arm's name in the results.", rich_help_panel="Engine"
    ),
]

ReplayModelOpt = Annotated[
    str | None,
    typer.Option(
        "--model",
        help="With --launch: a model folder (a config.json is enough; weights are dummy), "
        "instead of --shape. With --url: the model name to ask for (default: the first "
        "the server lists).",
        rich_help_panel="Engine",
    ),
]

ShapeOpt = Annotated[
    str | None,
    typer.Option(
        "--shape",
        help="With --launch: a packaged model shape, opt-small (vllm's default: steps of "
        "tens of ms on a CPU), opt-tiny, qwen2-small (transformers' default: the same "
        "on a CPU), qwen2-tiny, or qwen2.5-7b (for a GPU).",
        rich_help_panel="Engine",
    ),
]

VllmPythonOpt = Annotated[
    Path | None,
    typer.Option(
        "--vllm-python",
        envvar="SLIDINGPOLICY_VLLM_PYTHON",
        help="With --launch vllm: the Python of the environment holding vLLM and "
        "slidingpolicy-vllm.",
        rich_help_panel="Engine",
    ),
]

TransformersPythonOpt = Annotated[
    Path | None,
    typer.Option(
        "--transformers-python",
        envvar="SLIDINGPOLICY_TRANSFORMERS_PYTHON",
        help="With --launch transformers: the Python of the environment holding "
        "transformers and slidingpolicy-transformers[serve].",
        rich_help_panel="Engine",
    ),
]

ServerArgsOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--server-arg",
        help="With --launch: one more argument for every arm's server (repeat the option), "
        "e.g. --server-arg=--max-num-batched-tokens=1024 (vllm), "
        "--server-arg=--num-blocks=4096 (transformers).",
        rich_help_panel="Engine",
    ),
]

ReplayPredictorOpt = Annotated[
    Path | None,
    typer.Option(
        "--predictor",
        help="With --launch: the latency predictor JSON the policy arms price batches with "
        "(default: the adapter's packaged one).",
        rich_help_panel="Engine",
    ),
]

TraceDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--trace-dir",
        help="With --launch: each policy arm writes its per-step trace to DIR/ARM.jsonl "
        "(for `check` and calibration).",
        rich_help_panel="Engine",
    ),
]

KeepServersOpt = Annotated[
    bool,
    typer.Option(
        "--keep-servers/--restart-servers",
        metavar=" ",
        help="With --launch: keep every arm's server running for the whole matrix (one "
        "start each; ~3 GB each with vllm and opt-small), or start and stop one per run.",
        rich_help_panel="Engine",
    ),
]

StartTimeoutOpt = Annotated[
    float,
    typer.Option(
        "--start-timeout",
        help="Seconds a launched server has to answer /health.",
        rich_help_panel="Engine",
    ),
]

WarmupOpt = Annotated[
    int,
    typer.Option(
        "--warmup",
        min=0,
        help="Requests sent to each server before measuring.",
        rich_help_panel="Engine",
    ),
]

AllowRemoteOpt = Annotated[
    bool,
    typer.Option(
        "--allow-remote",
        metavar=" ",
        help="Allow a --url that is not a loopback address.",
        rich_help_panel="Engine",
    ),
]

ReplayRequestsOpt = Annotated[
    int,
    typer.Option(
        "--requests",
        "-n",
        help=f"Requests per run (at most {MAX_REPLAY_REQUESTS:,}).",
        rich_help_panel="Workload",
    ),
]

RateOpt = Annotated[
    float | None,
    typer.Option(
        "--rate",
        "-r",
        help="Poisson arrival rate (req/s); with a --trace that records times, rescales "
        "them to this mean rate (without it they are replayed as recorded).",
        rich_help_panel="Workload",
    ),
]

RatesOpt = Annotated[
    str | None,
    typer.Option(
        "--rates", help="Comma-separated rates instead of --rate.", rich_help_panel="Workload"
    ),
]

RepeatsOpt = Annotated[
    int,
    typer.Option(
        "--repeats",
        min=1,
        max=100,
        help="Runs of each (rate, seed) per arm.",
        rich_help_panel="Workload",
    ),
]

TimeoutOpt = Annotated[
    float,
    typer.Option(
        "--timeout",
        help="Seconds a request may take from its send to its last token; later, it is "
        "cancelled and counted as failed.",
    ),
]

TimeLimitOpt = Annotated[
    float,
    typer.Option(
        "--time-limit",
        help="Seconds the whole replay may take; runs that would start later are skipped "
        "(and listed).",
    ),
]
