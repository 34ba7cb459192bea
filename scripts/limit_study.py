"""Where a policy loses capacity to the bound: the experiments of docs/decisions.md, "How close
to the limit".

    python scripts/limit_study.py account --workload mixed-v1 --rate 1.646
    python scripts/limit_study.py arrivals --workload sharegpt --seeds 3
    python scripts/limit_study.py ttft --workload sharegpt --scale 2 --seeds 3
    python scripts/limit_study.py kv --workload mixed-v1 --rate 1.646
    python scripts/limit_study.py capacity --workload mixed-v1 --noise 0

`account` prices every batch a run executes with the bound's cost model and sets the time
against the linear program's optimum; `arrivals` sizes the policy with evenly spaced arrivals
in place of Poisson ones (same lengths, seeds, SLOs); `ttft` multiplies every TTFT alone, and
gives the limit of those SLOs beside the capacity; `kv` records the KV cache in use over a run;
`capacity` is the plain capacity (e.g. on noise-free hardware, which the CLI does not offer).
Each prints JSON. Capacities here use the capacity search's own rates and precision
(`runs.capacity_search.search`), serially, with the same early stop at 1% misses.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import numpy as np

from slidingpolicy.bound.cost import Attention
from slidingpolicy.bound.fluid import fluid_bound
from slidingpolicy.bound.limits import cost_of, limit
from slidingpolicy.bound.population import population
from slidingpolicy.engine.run_types import EngineOptions
from slidingpolicy.engine.simulator import simulate
from slidingpolicy.metrics import SLO_TARGET
from slidingpolicy.policies import by_name
from slidingpolicy.runs.batches import recording
from slidingpolicy.runs.capacity_search import search
from slidingpolicy.runs.specs import HardwareSpec, RunSpec, WorkloadSpec, predictor_of
from slidingpolicy.workloads import Poisson, RequestSpec, Workload

Build = Callable[[float, int], Workload]


def spec_of(args: argparse.Namespace, rate: float = 1.0, seed: int = 0) -> RunSpec:
    """The run the arguments name, at `rate` and `seed`."""
    hardware = HardwareSpec(args.hardware, args.model, args.tp, noise_sigma=args.noise)
    workload = WorkloadSpec(args.workload, args.requests)
    base = RunSpec(args.policy, hardware=hardware, workload=workload, seed=seed)
    return base.with_policy(args.policy).with_rate(rate)


def attainment(spec: RunSpec, workload: Workload) -> float:
    """The policy's attainment on `workload`, stopped once more than 1% have missed."""
    n = len(workload)
    options = EngineOptions(miss_budget=n - math.ceil(SLO_TARGET * n))
    policy = by_name(spec.policy, predictor_of(spec), **dict(spec.policy_options))
    run = simulate(policy, workload, spec.hardware.build(), spec.seed, options)
    return run.metrics.attainment


def capacity(args: argparse.Namespace, build: Build) -> list[float]:
    """The capacity search on the workloads `build(rate, seed)` makes, one per seed."""
    found = []
    for seed in range(args.seeds):
        spec = spec_of(args, seed=seed)

        def trial(rate: float, spec: RunSpec = spec, seed: int = seed) -> float:
            return attainment(spec, build(rate, seed))

        found.append(search(trial, args.start)[0])
    return found


def poisson(args: argparse.Namespace) -> Build:
    """The workload as `capacity` makes it."""
    return lambda rate, seed: spec_of(args, rate, seed).workload.build(Poisson(rate), seed)


def evenly(args: argparse.Namespace) -> Build:
    """The same requests, arriving 1/rate apart."""

    def build(rate: float, seed: int) -> Workload:
        drawn = poisson(args)(rate, seed)
        return Workload(
            drawn.name,
            tuple(attrs.evolve(r, arrival=(i + 1) / rate) for i, r in enumerate(drawn.requests)),
        )

    return build


def ttft_scaled(args: argparse.Namespace) -> Build:
    """The same requests with every TTFT multiplied by `args.scale`."""

    def build(rate: float, seed: int) -> Workload:
        drawn = poisson(args)(rate, seed)
        requests: tuple[RequestSpec, ...] = tuple(
            attrs.evolve(r, ttft_slo=r.ttft_slo * args.scale) for r in drawn.requests
        )
        return Workload(drawn.name, requests)

    return build


def _attention(attention: Attention, chunks: Sequence[int], contexts: Sequence[int]) -> float:
    """The roofline's attention of one batch."""
    c, u = np.array(chunks, dtype=np.float64), np.array(contexts, dtype=np.float64)
    p = c > 1
    pairs = attention.seconds_per_pair * c[p] * (u[p] + c[p] / 2)
    moved = attention.seconds_per_cached * (u[p] + 2 * c[p]) + attention.seconds_per_new * c[p]
    d, total = np.array([float((~p).sum())]), np.array([float(u[~p].sum())])
    group = max(attention.decode_compute(total, d)[0], attention.decode_memory(total, d)[0])
    return float(np.maximum(pairs, moved).sum()) + float(group)


def account(args: argparse.Namespace) -> dict[str, Any]:
    """Every batch of one run priced: where the GPU's time goes, beside the optimum's."""
    spec = spec_of(args, args.rate, args.seed)
    policy = recording(by_name(spec.policy, predictor_of(spec), **dict(spec.policy_options)))
    workload = spec.workload.build(spec.arrivals, spec.seed)
    model = spec.hardware.build()
    run = simulate(policy, workload, model, spec.seed, spec.options)
    cost = cost_of(spec.hardware)
    span = run.end - workload.requests[0].arrival
    samples = policy.samples
    latency = np.array([s.latency for s in samples])
    tokens = np.array([sum(s.chunks) for s in samples], dtype=np.float64)
    entries = np.array([len(s.chunks) for s in samples], dtype=np.float64)
    prefill = np.array([any(c > 1 for c in s.chunks) for s in samples])
    attention = np.array([_attention(cost.attention, s.chunks, s.contexts) for s in samples])
    counted = cost.tokens(tokens) + cost.entries(entries)
    best = limit(spec.workload, spec.hardware)
    return {
        "rate": args.rate,
        "seed": args.seed,
        "attainment": run.metrics.attainment,
        "preemptions": run.metrics.preemptions,
        "limit": best.bound,
        "share": args.rate / best.bound,
        "busy": float(latency.sum() / span),
        "count_part": float(counted.sum() / span),
        "attention_part": float(attention.sum() / span),
        "iterations_per_s": len(samples) / span,
        "prefill_iterations_per_s": float(prefill.sum() / span),
        "decode_only_time": float(latency[~prefill].sum() / span),
        "mean_tokens": float(tokens.mean()),
        "mean_tokens_with_prefill": float(tokens[prefill].mean()),
        "optimum_iterations_per_s": best.iterations,
        "optimum_mean_tokens": best.mean_tokens,
        "optimum_time_split": dict(best.time_split),
    }


def kv(args: argparse.Namespace) -> dict[str, Any]:
    """The KV cache in use over one run: its peak and mean share of the cache."""
    spec = spec_of(args, args.rate, args.seed)
    workload = spec.workload.build(spec.arrivals, spec.seed)
    used: list[float] = []

    def probe(now: float, blocks: int, total: int, *_: object) -> None:
        used.append(blocks / total)

    policy = by_name(spec.policy, predictor_of(spec), **dict(spec.policy_options))
    run = simulate(policy, workload, spec.hardware.build(), spec.seed, spec.options, probe=probe)
    return {
        "rate": args.rate,
        "peak_kv": max(used),
        "mean_kv": float(np.mean(used)),
        "preemptions": run.metrics.preemptions,
        "attainment": run.metrics.attainment,
    }


def _summary(values: list[float]) -> dict[str, Any]:
    return {"seeds": values, "mean": sum(values) / len(values)}


def main() -> None:
    """Run one experiment (module docstring) and print its JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("experiment", choices=["account", "arrivals", "ttft", "kv", "capacity"])
    parser.add_argument("--policy", default="slidingserve+")
    parser.add_argument("--workload", default="mixed-v1")
    parser.add_argument("--hardware", default="rtx3090")
    parser.add_argument("--model", default="qwen2.5-7b")
    parser.add_argument("--tp", type=int, default=2)
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rate", type=float, default=1.0)
    parser.add_argument("--start", type=float, default=1.5)
    parser.add_argument("--scale", type=float, default=2.0)
    parser.add_argument("--noise", type=float, default=0.02, help="the hardware's noise sigma")
    args = parser.parse_args()
    found: dict[str, Any]
    if args.experiment == "account":
        found = account(args)
    elif args.experiment == "kv":
        found = kv(args)
    elif args.experiment == "capacity":
        found = {"policy": args.policy, "noise": args.noise}
        found["capacity"] = _summary(capacity(args, poisson(args)))
    elif args.experiment == "arrivals":
        found = {"poisson": _summary(capacity(args, poisson(args)))}
        found["evenly"] = _summary(capacity(args, evenly(args)))
        found["limit"] = limit(spec_of(args).workload, spec_of(args).hardware).bound
    else:
        found = {"scale": args.scale, "capacity": _summary(capacity(args, ttft_scaled(args)))}
        grids = tuple(
            attrs.evolve(g, ttft=g.ttft * args.scale) for g in population(spec_of(args).workload)
        )
        found["limit"] = fluid_bound(grids, cost_of(spec_of(args).hardware)).bound
    print(json.dumps(found, indent=1))


if __name__ == "__main__":
    main()
