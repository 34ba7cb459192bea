"""Every policy under a burst: N ShareGPT-length requests arriving at once, default hardware
(qwen2.5-7b on 2× RTX 3090), default engine options (the hardware's KV cache).

Each (policy, seed) runs in its own process. Prints, per policy and seed, then the mean over
the seeds: SLO attainment, preemptions, TTFT p99, the TTFT p99 and max of the late requests
(those whose first token missed its TTFT SLO: the ones a policy that demotes late requests
serves last) and the run's end. Asserts nothing.

`python bench/burst.py [--requests 2000] [--seeds 3] [--policies a;b;...] [--workers 2]`

Two other arrival patterns, at multiples of a rate `--unit` (a capacity, req/s):
`--arrivals transient --base B`: Poisson at B·unit, 2·unit from 120 s for 60 s, then B·unit
again, with the requests that arrive by 360 s (Fig. 6's shape; `--requests` is ignored);
`--arrivals steady --load L`: Poisson at L·unit, `--requests` of them.
"""

from __future__ import annotations

import argparse
from concurrent.futures import ProcessPoolExecutor
from typing import Any

POLICIES = ("qoserve", "slidingserve", "slidingserve+", "sarathi-edf", "vllm")
"""The policies of the burst table (docs/decisions.md, "Bursts")."""
FIGURES = ("attainment", "preemptions", "ttft_p99", "late_ttft_p99", "late_ttft_max", "end")


Job = tuple[str, argparse.Namespace, int]


def workload_of(args: argparse.Namespace, seed: int) -> Any:
    """The workload `args` describe, drawn with `seed`."""
    import attrs

    from slidingpolicy.workloads import Burst, Poisson, Workload, make_workload

    unit = args.unit
    if args.arrivals == "transient":
        requests = int(1.25 * unit * (args.base * 300.0 + 2.0 * 60.0))
        return make_workload(
            args.workload, requests, Burst(args.base * unit, 2.0 * unit, 120.0, 60.0), seed
        )
    if args.arrivals == "steady":
        return make_workload(args.workload, args.requests, Poisson(args.load * unit), seed)
    drawn = make_workload(args.workload, args.requests, Poisson(1.0), seed)
    return Workload("burst", tuple(attrs.evolve(r, arrival=0.0) for r in drawn.requests))


def case(job: Job) -> dict[str, float]:
    """Run one policy on the workload of one seed; its figures."""
    from slidingpolicy import default_predictor
    from slidingpolicy.engine import EngineOptions, simulate
    from slidingpolicy.hardware import default_hardware
    from slidingpolicy.policies import by_name
    from slidingpolicy.policies.labels import parse_label

    text, args, seed = job
    name, options = parse_label(text)
    policy = by_name(name, default_predictor(), **dict(options))
    out = simulate(policy, workload_of(args, seed), default_hardware(), seed, EngineOptions())
    m = out.metrics
    return {
        "attainment": m.attainment,
        "preemptions": m.preemptions,
        "ttft_p99": m.ttft_p99,
        "late_ttft_p99": m.late_ttft_p99,
        "late_ttft_max": m.late_ttft_max,
        "end": out.end,
    }


def row(name: str, f: dict[str, float]) -> str:
    """One line of the table."""
    return (
        f"{name:<44} {f['attainment']:>10.1%} {f['preemptions']:>11.1f} {f['ttft_p99']:>10.1f} "
        f"{f['late_ttft_p99']:>10.1f} {f['late_ttft_max']:>10.1f} {f['end']:>8.1f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--seeds", type=int, default=3, help="seeds 0 .. N-1")
    parser.add_argument("--workload", default="sharegpt")
    parser.add_argument("--policies", default=";".join(POLICIES), help="labels, ';'-separated")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--arrivals", choices=("at-once", "transient", "steady"), default="at-once")
    parser.add_argument("--unit", type=float, default=1.0, help="req/s the multiples are of")
    parser.add_argument("--base", type=float, default=0.7, help="transient: before and after")
    parser.add_argument("--load", type=float, default=1.25, help="steady: the multiple")
    args = parser.parse_args()
    names = args.policies.split(";")
    seeds = range(args.seeds)
    jobs: list[Job] = [(name, args, seed) for name in names for seed in seeds]
    print(
        f"{'policy (seed)':<44} {'attainment':>10} {'preemptions':>11} {'TTFT p99 s':>10} "
        f"{'late p99 s':>10} {'late max s':>10} {'end s':>8}"
    )
    with ProcessPoolExecutor(args.workers) as pool:
        figures = list(pool.map(case, jobs))
    for j, name in enumerate(names):
        runs = figures[j * len(seeds) : (j + 1) * len(seeds)]
        for seed, f in zip(seeds, runs, strict=True):
            print(row(f"{name} ({seed})", f))
        mean = {k: sum(f[k] for f in runs) / len(runs) for k in FIGURES}
        print(row(f"{name} (mean)", mean), flush=True)


if __name__ == "__main__":
    main()
