"""`python -m slidingpolicy_transformers COMMAND`:

- `serve MODEL [options]`: serve a model folder (a `config.json` is enough: the weights are
  random) through transformers' continuous batching under one arm, over an
  OpenAI-compatible streaming API on 127.0.0.1 (`server`);
- `grid MODEL --out DIR --chunks ... --batches ... --contexts ...`: measure the engine's step
  time over a grid of chunks, decode batches and contexts, as a step trace (`grid_run`);
- `grid-report DIR`: that run's steps against the offline engine's H100/H200 hardware models
  (`grid_report`).
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from slidingpolicy import SlidingPolicyError

from slidingpolicy_transformers.engine import DTYPES, Engine, EngineSettings, adapter_options


def parser() -> argparse.ArgumentParser:
    """The command line."""
    top = argparse.ArgumentParser(prog="python -m slidingpolicy_transformers")
    commands = top.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve a model folder under one arm")
    serve.add_argument("model", type=Path, help="a model folder (config.json is enough)")
    serve.add_argument("--arm", default="native",
                       help="native (the engine's FIFO), prefill_first, or a policy label "
                       "name[key=value,...] (default: native)")  # fmt: skip
    serve.add_argument("--adapter-config", default="{}",
                       help="the adapter's other settings as JSON: predictor, ttft_slo, "
                       "tbt_slo, prefill_throughput, check_plans, trace")  # fmt: skip
    serve.add_argument("--served-model-name", default=None)
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--num-blocks", type=int, default=1024)
    serve.add_argument("--block-size", type=int, default=None)
    serve.add_argument("--max-batch-tokens", type=int, default=None)
    serve.add_argument("--max-requests-per-batch", type=int, default=None)
    serve.add_argument("--device", default="cpu")
    serve.add_argument("--dtype", choices=sorted(DTYPES), default="float32")
    serve.add_argument("--seed", type=int, default=0)
    serve.add_argument("--attention", default="sdpa")
    grid = commands.add_parser("grid", help="measure step times over a grid of batches")
    grid.add_argument("model", type=Path, help="a model folder (config.json is enough)")
    grid.add_argument("--out", type=Path, required=True, help="folder for the trace and grid.json")
    for name, meaning in GRID_SIZES.items():
        grid.add_argument(f"--{name}", type=sizes, required=True, help=meaning)
    grid.add_argument("--steps", type=int, default=6, help="steps per cell (default: 6)")
    grid.add_argument("--warmup", type=int, default=2,
                      help="first steps of a cell the report leaves out (default: 2)")  # fmt: skip
    grid.add_argument("--device", default="cpu")
    grid.add_argument("--dtype", choices=sorted(DTYPES), default="float32")
    grid.add_argument("--block-size", type=int, default=256)
    grid.add_argument("--budget", type=float, default=600.0,
                      help="seconds the run may take, the model's build included")  # fmt: skip
    grid.add_argument("--stall", type=float, default=60.0,
                      help="seconds without a step after which the run stops")  # fmt: skip
    report = commands.add_parser("grid-report", help="a grid run against the hardware models")
    report.add_argument("folder", type=Path, help="the grid run's --out folder")
    report.add_argument("--hardware", type=names, default=None,
                        help="hardware models, comma-separated (default: every h100 and h200 "
                        "model built in)")  # fmt: skip
    report.add_argument("--model", default="qwen2.5-7b", help="the model shape they price")
    return top


GRID_SIZES = {
    "chunks": "prefill chunk sizes, comma-separated (0: decodes only)",
    "batches": "decode batch sizes, comma-separated (0: the chunk alone)",
    "contexts": "the decodes' prompt lengths, comma-separated",
}


def sizes(text: str) -> list[int]:
    """A comma-separated list of whole numbers."""
    try:
        return [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected e.g. 0,128,512") from None


def names(text: str) -> list[str]:
    """A comma-separated list of names."""
    return [part.strip() for part in text.split(",") if part.strip()]


def main(argv: list[str] | None = None) -> None:
    """Run the command line on `argv` (default: this process's arguments)."""
    arguments = parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    commands = {"serve": _serve, "grid": _grid, "grid-report": _grid_report}
    try:
        commands[arguments.command](arguments)
    except (SlidingPolicyError, ValueError, OSError) as error:
        sys.exit(f"slidingpolicy-transformers {arguments.command}: {error}")


def _grid(arguments: argparse.Namespace) -> None:
    from slidingpolicy_transformers.grid import Grid
    from slidingpolicy_transformers.grid_run import RunSettings, run_grid

    grid = Grid(arguments.chunks, arguments.batches, arguments.contexts, arguments.steps,
                arguments.warmup)  # fmt: skip
    settings = RunSettings(arguments.model, arguments.device, arguments.dtype,
                           arguments.block_size, arguments.budget, arguments.stall)  # fmt: skip
    described = run_grid(grid, settings, arguments.out)
    print(
        f"grid: {described['cells_done']} of {described['cells']} cells, "
        f"{described['steps_run']} steps in {described['seconds']:.1f} s "
        f"(model built in {described['build_seconds']:.1f} s; ended: {described['ended']}); "
        f"trace in {arguments.out / described['trace']}"
    )


def _grid_report(arguments: argparse.Namespace) -> None:
    from slidingpolicy_transformers.grid_report import default_hardware, report, show

    hardware = arguments.hardware or default_hardware()
    print(show(report(arguments.folder, hardware, arguments.model)))


def _serve(arguments: argparse.Namespace) -> None:
    from slidingpolicy_transformers.server import serve

    adapter = adapter_options(arguments.adapter_config)
    settings = EngineSettings(
        arguments.model,
        arguments.arm,
        adapter,
        arguments.num_blocks,
        arguments.block_size,
        arguments.max_batch_tokens,
        arguments.max_requests_per_batch,
        arguments.device,
        arguments.dtype,
        arguments.seed,
        arguments.attention,
    )
    engine = Engine(settings)
    name = arguments.served_model_name or arguments.model.name
    serve(engine, name, arguments.host, arguments.port)


if __name__ == "__main__":
    main()
