"""Every policy under a burst: N ShareGPT-length requests arriving at once, default hardware.

Each policy runs in its own process. Prints, per policy: SLO attainment, preemptions, TTFT
p99, and the TTFT p99 and max of the late requests (those whose first token missed its TTFT
SLO: the ones a policy that demotes late requests serves last). Asserts nothing.

`python bench/burst.py [--requests 2000] [--seed 0] [--policies a,b,...] [--workers 2]`
"""

from __future__ import annotations

import argparse
from concurrent.futures import ProcessPoolExecutor

POLICIES = ("qoserve", "slidingserve", "slidingserve+", "sarathi-edf", "vllm")


def case(job: tuple[str, str, int, int]) -> dict[str, float]:
    """Run one policy on the burst; its figures."""
    import attrs

    from slidingpolicy import default_predictor
    from slidingpolicy.engine import EngineOptions, simulate
    from slidingpolicy.hardware import build_hardware
    from slidingpolicy.policies import by_name
    from slidingpolicy.policies.labels import parse_label
    from slidingpolicy.workloads import Poisson, Workload, make_workload

    text, workload, requests, seed = job
    drawn = make_workload(workload, requests, Poisson(1.0), seed)
    at_once = Workload("burst", tuple(attrs.evolve(r, arrival=0.0) for r in drawn.requests))
    name, options = parse_label(text)
    policy = by_name(name, default_predictor(), **dict(options))
    hardware = build_hardware("rtx3090", "qwen2.5-7b", 2)
    out = simulate(policy, at_once, hardware, seed, EngineOptions())
    m = out.metrics
    return {
        "attainment": m.attainment,
        "preemptions": m.preemptions,
        "ttft_p99": m.ttft_p99,
        "late_ttft_p99": m.late_ttft_p99,
        "late_ttft_max": m.late_ttft_max,
        "end": out.end,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workload", default="sharegpt")
    parser.add_argument("--policies", default=",".join(POLICIES), help="labels, ';'-separated")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    names = args.policies.split(";") if ";" in args.policies else args.policies.split(",")
    jobs = [(name, args.workload, args.requests, args.seed) for name in names]
    print(
        f"{'policy':<40} {'attainment':>10} {'preemptions':>11} {'TTFT p99 s':>10} "
        f"{'late p99 s':>10} {'late max s':>10} {'end s':>8}"
    )
    with ProcessPoolExecutor(args.workers) as pool:
        for name, f in zip(names, pool.map(case, jobs), strict=True):
            print(
                f"{name:<40} {f['attainment']:>10.1%} {f['preemptions']:>11.0f} "
                f"{f['ttft_p99']:>10.1f} {f['late_ttft_p99']:>10.1f} {f['late_ttft_max']:>10.1f} "
                f"{f['end']:>8.1f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
