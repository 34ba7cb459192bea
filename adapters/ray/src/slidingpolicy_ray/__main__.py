"""`python -m slidingpolicy_ray serve MODEL [options]`: start a local Ray cluster (loopback
only) and serve a model folder on N replicas, each transformers' continuous batching under a
policy, routed by our SLO-aware router or Ray's default one, over the OpenAI-compatible
streaming API `slidingpolicy replay --url` speaks; until SIGINT or SIGTERM, then the
application and the cluster stop."""

from __future__ import annotations

import argparse
import signal
import threading
from pathlib import Path

from slidingpolicy_transformers.engine import adapter_options

from slidingpolicy_ray.app import DEFAULT, AppSettings, application


def parser() -> argparse.ArgumentParser:
    """The command line."""
    top = argparse.ArgumentParser(prog="python -m slidingpolicy_ray")
    commands = top.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve a model folder on a local Ray cluster")
    serve.add_argument("model", type=Path, help="a model folder (config.json is enough)")
    serve.add_argument("--replicas", type=int, default=2)
    serve.add_argument("--router", default="slo-aware",
                       help=f"{DEFAULT} (Ray Serve's power of two choices) or a "
                       "slidingpolicy router label, e.g. slo-aware, least-tokens "
                       "(default: slo-aware)")  # fmt: skip
    serve.add_argument("--arm", default="slidingserve+", help="the replicas' policy label")
    serve.add_argument("--adapter-config", default="{}",
                       help="the adapter's other settings as JSON: predictor, ttft_slo, "
                       "tbt_slo, prefill_throughput, check_plans, trace")  # fmt: skip
    serve.add_argument("--stats-period", type=float, default=0.5,
                       help="seconds between a replica's reports (default: 0.5)")  # fmt: skip
    serve.add_argument("--replica-cpus", type=float, default=1.0)
    serve.add_argument("--num-cpus", type=int, default=None,
                       help="the local cluster's CPUs (default: Ray's count)")  # fmt: skip
    serve.add_argument("--max-ongoing", type=int, default=256)
    serve.add_argument("--num-blocks", type=int, default=1024)
    serve.add_argument("--served-model-name", default=None)
    serve.add_argument("--port", type=int, default=8000)
    return top


def main(argv: list[str] | None = None) -> None:
    """Run the command line on `argv` (default: this process's arguments)."""
    arguments = parser().parse_args(argv)
    adapter = adapter_options(arguments.adapter_config)
    settings = AppSettings(
        arguments.model,
        arguments.arm,
        adapter,
        arguments.replicas,
        arguments.replica_cpus,
        arguments.router,
        arguments.stats_period,
        arguments.max_ongoing,
        arguments.num_blocks,
        arguments.served_model_name,
    )
    serve_locally(settings, arguments.port, arguments.num_cpus)


def serve_locally(settings: AppSettings, port: int, num_cpus: int | None) -> None:
    """Start a local Ray cluster on 127.0.0.1, serve `settings`' application on `port`
    until SIGINT or SIGTERM, then shut both down."""
    import ray
    from ray import serve

    stop = threading.Event()
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, lambda *_: stop.set())
    ray.init(num_cpus=num_cpus, include_dashboard=False, _node_ip_address="127.0.0.1")
    try:
        serve.start(http_options={"host": "127.0.0.1", "port": port})
        serve.run(application(settings), name="slidingpolicy", route_prefix="/")
        print(f"slidingpolicy-ray: serving on http://127.0.0.1:{port}", flush=True)
        stop.wait()
    finally:
        serve.shutdown()  # type: ignore[no-untyped-call]
        ray.shutdown()


if __name__ == "__main__":
    main()
