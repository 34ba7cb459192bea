"""What the engine's checking costs: `check_plan` per plan beside the policy's own decision,
and a whole simulation checked (`EngineOptions(strict=True)`) beside the same unchecked.

For each policy: one run (mixed-v1 at `--rate`, `--requests` requests, the default hardware,
seed 0) records every (state, plan) the engine checked or would have; `check_plan` is then
timed on each pair (`--repeats` times, the least kept), and the policy's CPU time per decision
is read off the run. Then the run is timed again, checked and unchecked, `--repeats` times
each, the least kept. A policy of your own is checked by default; ours are not.

Prints figures, asserts nothing. `python bench/check_cost.py [--requests N] [--rate R]
[--repeats K] [--policy NAME ...]`.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np

from slidingpolicy import BatchPlan, SchedulerState, by_name, check_plan, default_predictor
from slidingpolicy.engine import EngineOptions, simulate
from slidingpolicy.hardware import default_hardware
from slidingpolicy.policies import names
from slidingpolicy.workloads import Poisson, Workload, make_workload

Pair = tuple[SchedulerState, BatchPlan, int]


def recorded(policy: Any, workload: Workload) -> tuple[list[Pair], float, float]:
    """Every (state, plan, budget) of an unchecked run, the policy's mean and median CPU
    seconds per decision."""
    pairs: list[Pair] = []

    def keep(state: SchedulerState, plan: BatchPlan, budget: int) -> None:
        pairs.append((state, plan, budget))

    out = simulate(policy, workload, default_hardware(), 0, EngineOptions(strict=False), keep)
    mean = out.stats.policy_cpu_seconds / max(out.stats.decisions, 1)
    return pairs, mean, out.stats.policy_cpu_p50


def check_times(pairs: list[Pair], repeats: int) -> np.ndarray[Any, np.dtype[np.float64]]:
    """The least of `repeats` wall times of `check_plan` on each pair (seconds)."""
    times = np.full(len(pairs), np.inf)
    for _ in range(repeats):
        for i, (state, plan, budget) in enumerate(pairs):
            start = time.perf_counter()
            check_plan(state, plan, token_budget=budget)
            times[i] = min(times[i], time.perf_counter() - start)
    return times


def run_seconds(policy: Any, workload: Workload, strict: bool, repeats: int) -> float:
    """The least wall time of `repeats` runs, checked or not."""
    best = np.inf
    for _ in range(repeats):
        out = simulate(policy, workload, default_hardware(), 0, EngineOptions(strict=strict))
        best = min(best, out.stats.wall_seconds)
    return float(best)


def main() -> None:
    """Print the table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=300, help="requests of each run")
    parser.add_argument("--rate", type=float, default=3.0, help="arrivals per second")
    parser.add_argument("--repeats", type=int, default=3, help="timings per figure (least kept)")
    parser.add_argument(
        "--policy", action="append", choices=names(), help="only these (default: all)"
    )
    args = parser.parse_args()
    workload = make_workload("mixed-v1", args.requests, Poisson(args.rate), 0)
    print(
        f"mixed-v1, {args.requests} requests at {args.rate:g}/s, default hardware; "
        f"least of {args.repeats}"
    )
    print(
        f"{'policy':<22} {'plans':>6} {'check µs mean/p50/p99':>22} {'policy µs mean/p50':>19} "
        f"{'check/policy':>12} {'run s unchecked/checked':>24}"
    )
    for name in args.policy or names():
        policy = by_name(name, default_predictor())
        pairs, policy_mean, policy_p50 = recorded(policy, workload)
        checks = check_times(pairs, args.repeats) * 1e6
        mean, p50, p99 = checks.mean(), np.percentile(checks, 50), np.percentile(checks, 99)
        unchecked = run_seconds(policy, workload, False, args.repeats)
        checked = run_seconds(policy, workload, True, args.repeats)
        print(
            f"{name:<22} {len(pairs):>6} {f'{mean:.1f}/{p50:.1f}/{p99:.1f}':>22} "
            f"{f'{policy_mean * 1e6:.0f}/{policy_p50 * 1e6:.0f}':>19} "
            f"{mean / (policy_mean * 1e6):>11.1%} "
            f"{f'{unchecked:.2f}/{checked:.2f} ({checked / unchecked - 1:+.1%})':>24}"
        )


if __name__ == "__main__":
    main()
