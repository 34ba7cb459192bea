"""`python -m slidingpolicy_transformers serve MODEL [options]`: serve a model folder (a
`config.json` is enough: the weights are random) through transformers' continuous batching
under one arm, over an OpenAI-compatible streaming API on 127.0.0.1 (`server`)."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

from slidingpolicy import SlidingPolicyError

from slidingpolicy_transformers.engine import DTYPES, Engine, EngineSettings


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
    return top


def main(argv: list[str] | None = None) -> None:
    """Run the command line on `argv` (default: this process's arguments)."""
    from slidingpolicy_transformers.server import serve

    arguments = parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        adapter = json.loads(arguments.adapter_config)
        if not isinstance(adapter, dict):
            raise ValueError("must be a JSON object")
    except ValueError as error:
        sys.exit(f"--adapter-config: {error}")
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
    try:
        engine = Engine(settings)
        name = arguments.served_model_name or arguments.model.name
        serve(engine, name, arguments.host, arguments.port)
    except (SlidingPolicyError, ValueError, OSError) as error:
        sys.exit(f"slidingpolicy-transformers: {error}")


if __name__ == "__main__":
    main()
