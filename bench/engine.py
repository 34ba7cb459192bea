"""Engine speed: simulated requests per wall-second and peak memory, each case in its own process.

Every case runs as a child process (`--case`), timed from the outside as a whole process
(interpreter start, imports, workload, simulation) with its peak resident memory read from the
child's rusage (`os.wait4`). Cases: each workload under `sarathi` and `slidingserve` on the
default hardware (qwen2.5-7b, 2× rtx3090), and the anchor case the issue compares with Vidur:
`--hardware a100-80g --model llama3-8b --tp 1 --workload arxiv --rate 1 --requests 10000
--policy sarathi` (Vidur: 73 s, 1.5 GB; target ≤ 7 s and ≤ 300 MB; slidingserve ≤ 20 s).

Prints figures, asserts nothing. `python bench/engine.py [--requests N] [--anchor-requests N]
[--skip-anchor]`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

WORKLOADS = ("sharegpt", "arxiv", "mixed-v1", "mixed-v2")
POLICIES = ("sarathi", "slidingserve")
ANCHOR = ("a100-80g", "llama3-8b", 1, "arxiv", 1.0)


def child(args: argparse.Namespace) -> None:
    """Run one case in this process and print what it simulated as JSON."""
    from slidingpolicy import default_predictor
    from slidingpolicy.engine import EngineOptions, simulate
    from slidingpolicy.hardware import build_hardware
    from slidingpolicy.policies import by_name
    from slidingpolicy.workloads import Poisson, make_workload

    hardware = build_hardware(args.gpu, args.model, args.tp)
    policy = by_name(args.policy, default_predictor(args.gpu, args.model, args.tp))
    workload = make_workload(args.workload, args.requests, Poisson(args.rate), args.seed)
    out = simulate(policy, workload, hardware, args.seed, EngineOptions())
    print(
        json.dumps(
            {
                "iterations": out.metrics.iterations,
                "closed_form_iterations": out.stats.run_iterations,
                "simulation_seconds": out.stats.wall_seconds,
                "attainment": out.metrics.attainment,
            }
        )
    )


def measure(
    gpu: str, model: str, tp: int, workload: str, rate: float, n: int, policy: str
) -> dict[str, float]:
    """Run a case as a child process; its whole wall time, peak RSS and what it reported."""
    command = [
        sys.executable,
        __file__,
        "--case",
        "--gpu",
        gpu,
        "--model",
        model,
        "--tp",
        str(tp),
        "--workload",
        workload,
        "--rate",
        str(rate),
        "--requests",
        str(n),
        "--policy",
        policy,
    ]
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    output = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    if status != 0:
        raise SystemExit(f"case {command} failed with status {status}")
    report = json.loads(output.strip().splitlines()[-1])
    return {"wall": wall, "rss_mb": usage.ru_maxrss / 1024, **report}


def row(label: str, n: int, figures: dict[str, float]) -> str:
    """One printed line."""
    return (
        f"{label:<44} {n:>6} {figures['wall']:>8.2f} {n / figures['wall']:>9.0f} "
        f"{figures['rss_mb']:>8.0f} {figures['iterations']:>10.0f} "
        f"{figures['closed_form_iterations'] / max(1, figures['iterations']):>7.0%} "
        f"{figures['simulation_seconds']:>7.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--gpu", default="rtx3090")
    parser.add_argument("--model", default="qwen2.5-7b")
    parser.add_argument("--tp", type=int, default=2)
    parser.add_argument("--workload", default="mixed-v1")
    parser.add_argument("--rate", type=float, default=1.0)
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--policy", default="sarathi")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--anchor-requests", type=int, default=10000)
    parser.add_argument("--skip-anchor", action="store_true")
    args = parser.parse_args()
    if args.case:
        child(args)
        return
    print(
        f"{'case':<44} {'reqs':>6} {'wall s':>8} {'req/s':>9} {'RSS MB':>8} "
        f"{'iters':>10} {'closed':>7} {'sim s':>7}"
    )
    for workload in WORKLOADS:
        for policy in POLICIES:
            figures = measure(
                args.gpu, args.model, args.tp, workload, args.rate, args.requests, policy
            )
            label = f"{workload} @ {args.rate:g}/s, {policy} (default hw)"
            print(row(label, args.requests, figures), flush=True)
    if not args.skip_anchor:
        gpu, model, tp, workload, rate = ANCHOR
        for policy in POLICIES:
            figures = measure(gpu, model, tp, workload, rate, args.anchor_requests, policy)
            label = f"anchor: {workload} @ {rate:g}/s, {policy}, {gpu} {model} tp{tp}"
            print(row(label, args.anchor_requests, figures), flush=True)


if __name__ == "__main__":
    main()
