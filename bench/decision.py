"""Wall time of one decision (`plan`) of every registered policy on realistic scheduler states.

Every policy decides on the same states, so the rows of one cell compare like with like.
States: D decodes and Q prefill candidates drawn from the mixed-v1 length tables, default
SLOs (ShareGPT 3 s / 100 ms), the default predictor (qwen2.5-7b, 2× rtx3090). The chunker
states give every candidate ample TTFT slack; the constructor states put a quarter of the
candidates, with 20–300 prompt tokens left, 0.1–0.3 s from their TTFT deadline, so that
the violation check routes to BatchConstructor.
A second table times the same policies on states an engine run really met: every 10th
snapshot of slidingserve serving the arXiv anchor's setup (llama3-8b on one A100, 1 req/s;
`--run-requests` requests), where most states hold a few decodes and one candidate.
A third table times `observe` of the policies that learn online by default on those states.
A fourth table times each policy under overload: 64 decodes and N waiting requests of 50–4,000
prompt tokens, N from 100 to 50,000 (`--overload`), on states built from a `CandidateQueue`
and followed by the states an engine would show next, as the engine does (issue "bounded
cost under overload"); the first plan on a queue, which builds its index, is shown apart.
Prints p50 and p99 over many repetitions per state, and the paths the plans took; run
`python bench/decision.py` (`--policy NAME`, repeatable, to time only some).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import attrs
import numpy as np

from slidingpolicy import CandidateQueue, Policy, Request, SchedulerState, default_predictor
from slidingpolicy.engine import EngineOptions, simulate
from slidingpolicy.hardware import build_hardware
from slidingpolicy.policies import Online, by_name, names
from slidingpolicy.records.plan import BatchPlan
from slidingpolicy.workloads import Poisson, make_workload
from slidingpolicy.workloads.distributions import ARXIV, SHAREGPT

NOW = 1000.0
TTFT, TBT = 3.0, 0.1


def _lengths(n: int, rng: np.random.Generator) -> tuple[list[int], list[int]]:
    arxiv = rng.random(n) < 0.25
    prompt_s, output_s = SHAREGPT.sample(n, rng)
    prompt_a, output_a = ARXIV.sample(n, rng)
    prompt = np.where(arxiv, prompt_a, prompt_s)
    output = np.where(arxiv, output_a, output_s)
    return prompt.tolist(), output.tolist()


def make_state(
    decodes: int, candidates: int, risky: bool, rng: np.random.Generator
) -> SchedulerState:
    """A state with `decodes` decoding requests and `candidates` waiting/prefilling ones."""
    requests = []
    prompts, outputs = _lengths(decodes, rng)
    for i, (p, o) in enumerate(zip(prompts, outputs, strict=True)):
        generated = int(rng.integers(1, max(2, o)))
        slack = rng.uniform(0.05, 1.0)
        arrival = NOW + slack - TTFT - generated * TBT
        requests.append(Request(f"d{i}", max(arrival, 0.0), p, p, generated, TTFT, TBT))
    prompts, _ = _lengths(candidates, rng)
    for i, p in enumerate(prompts):
        prefilled = int(rng.integers(1, p)) if p > 1 and rng.random() < 0.2 else 0
        if risky and i % 4 == 0:
            slack = rng.uniform(0.1, 0.3)
            prefilled = max(0, p - int(rng.integers(20, 300)))
        else:
            slack = rng.uniform(1.0, TTFT)
        requests.append(Request(f"q{i}", NOW + slack - TTFT, p, prefilled, 0, TTFT, TBT))
    return SchedulerState(NOW, tuple(requests), prefill_throughput=8000.0)


def overload_state(
    waiting: int, rng: np.random.Generator, rate: float | None = None
) -> SchedulerState:
    """64 decoding requests and a queue of `waiting` waiting ones of 50–4,000 prompt tokens:
    a state built from a `CandidateQueue`, as an engine that keeps one gives it. Every one
    has 0.5–3 s of TTFT slack left; or, with `rate`, they arrived at `rate` per second up to
    now, as an overloaded engine holds them (most past their TTFT deadline)."""
    decoding = make_state(64, 0, False, rng).requests
    prompts = rng.integers(50, 4001, waiting).tolist()
    if rate is None:
        arrivals = (NOW + rng.uniform(0.5, TTFT, waiting) - TTFT).tolist()
    else:
        arrivals = (NOW - np.arange(waiting)[::-1] / rate).tolist()
    queue = CandidateQueue.of(
        Request(f"w{i}", max(arrival, 0.0), prompt, 0, 0, TTFT, TBT)
        for i, (prompt, arrival) in enumerate(zip(prompts, arrivals, strict=True))
    )
    return SchedulerState.of(NOW, decoding, queue, prefill_throughput=8000.0)


def next_state(state: SchedulerState, plan: BatchPlan, step: int, rate: float) -> SchedulerState:
    """The state an engine would show 50 ms later: the plan's prefill chunks applied (a
    finished prefill leaves the queue; the decodes stay as they are) and the arrivals of
    `rate` per second."""
    now = state.now + 0.05
    leaving: list[str] = []
    joining: list[Request] = []
    for allocation in plan.allocations:
        request = state.queue.get(allocation.request_id)
        if request is None:
            continue
        leaving.append(request.id)
        prefilled = request.prefilled + allocation.tokens
        if prefilled < request.prompt_tokens:
            joining.append(attrs.evolve(request, prefilled=prefilled))
    arrivals = int((step + 1) * 0.05 * rate) - int(step * 0.05 * rate)
    joining += [Request(f"n{step}.{k}", now, 1000, 0, 0, TTFT, TBT) for k in range(arrivals)]
    queue = state.queue.update(leaving, joining)
    return SchedulerState.of(now, state.decoding, queue, state.prefill_throughput)


def successive_times(
    policy: Policy[Any], state: SchedulerState, steps: int, rate: float
) -> tuple[float, list[float]]:
    """The first plan's time (it builds the queue's index) and the times of the next `steps`
    plans, each on the state after the last plan (`next_state`)."""
    pstate = policy.init()
    start = time.perf_counter()
    plan, pstate = policy.plan(pstate, state)
    first = time.perf_counter() - start
    times = []
    for step in range(steps):
        state = next_state(state, plan, step, rate)
        start = time.perf_counter()
        plan, pstate = policy.plan(pstate, state)
        times.append(time.perf_counter() - start)
    return first, times


def run_states(requests: int) -> list[SchedulerState]:
    """Every 10th state slidingserve met serving arXiv at 1 req/s on llama3-8b / one A100."""
    hardware = ("a100-80g", "llama3-8b", 1)
    policy = by_name("slidingserve", default_predictor(*hardware))
    workload = make_workload("arxiv", requests, Poisson(1.0), 0)
    met: list[SchedulerState] = []

    def keep(state: SchedulerState, plan: BatchPlan, budget: int) -> None:
        met.append(state)

    simulate(policy, workload, build_hardware(*hardware), 0, EngineOptions(), on_plan=keep)
    return met[::10]


def measure(plan: Callable[[], tuple[BatchPlan, object]], repeats: int) -> list[float]:
    """Wall times (seconds) of `repeats` calls."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        plan()
        times.append(time.perf_counter() - start)
    return times


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0–100)."""
    return float(np.percentile(values, q))


def main() -> None:
    """Print the table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--states", type=int, default=20, help="states per cell")
    parser.add_argument("--repeats", type=int, default=50, help="calls per state")
    parser.add_argument(
        "--policy", action="append", choices=names(), help="time only these (default: all)"
    )
    parser.add_argument(
        "--run-requests", type=int, default=1000, help="requests of the engine run (0: skip)"
    )
    parser.add_argument(
        "--overload",
        default="100,1000,10000,50000",
        help="waiting requests of the overload table, comma-separated ('' skips it)",
    )
    args = parser.parse_args()
    predictor = default_predictor()
    policies = [by_name(name, predictor) for name in args.policy or names()]
    rng = np.random.default_rng(7)
    cells = [
        (risky, decodes, candidates)
        for risky in (False, True)
        for decodes in (16, 64, 256)
        for candidates in (8, 32, 64)
    ]
    drawn = {
        (risky, d, q): [make_state(d, q, risky, rng) for _ in range(args.states)]
        for risky, d, q in cells
    }
    print(
        f"{'policy':20s} {'states':12s} {'decodes':>7s} {'cands':>5s} "
        f"{'p50 µs':>8s} {'p99 µs':>8s}  paths"
    )
    for policy in policies:
        pstate = policy.init()
        for cell in cells:
            risky, decodes, candidates = cell
            times: list[float] = []
            paths: dict[str, int] = {}
            for state in drawn[cell]:
                chosen, _ = policy.plan(pstate, state)
                paths[chosen.branch] = paths.get(chosen.branch, 0) + 1
                times += measure(partial(policy.plan, pstate, state), args.repeats)
            label = "constructor" if risky else "chunker"
            seen = ",".join(f"{k}:{v}" for k, v in sorted(paths.items()))
            print(
                f"{policy.name:20s} {label:12s} {decodes:7d} {candidates:5d} "
                f"{percentile(times, 50) * 1e6:8.0f} {percentile(times, 99) * 1e6:8.0f}  {seen}"
            )
    if args.run_requests > 0:
        met = run_states(args.run_requests)
        time_run_states(args.policy or list(names()), met)
        time_observe(args.policy or list(names()), met)
    if args.overload:
        sizes = [int(n) for n in args.overload.split(",")]
        time_overload(policies, sizes, args.repeats)


def time_run_states(chosen: Sequence[str], states: Sequence[SchedulerState]) -> None:
    """The second table: each policy (with the A100 predictor) on the engine run's states."""
    predictor = default_predictor("a100-80g", "llama3-8b", 1)
    print(f"\nstates from an engine run: {len(states)} (slidingserve, arXiv anchor setup)")
    print(f"{'policy':20s} {'p50 µs':>8s} {'p99 µs':>8s}  paths")
    for name in chosen:
        policy = by_name(name, predictor)
        pstate = policy.init()
        times: list[float] = []
        paths: dict[str, int] = {}
        for state in states:
            chosen_plan, _ = policy.plan(pstate, state)
            paths[chosen_plan.branch] = paths.get(chosen_plan.branch, 0) + 1
            times += measure(partial(policy.plan, pstate, state), 5)
        seen = ",".join(f"{k}:{v}" for k, v in sorted(paths.items()))
        print(
            f"{name:20s} {percentile(times, 50) * 1e6:8.0f} {percentile(times, 99) * 1e6:8.0f}"
            f"  {seen}"
        )


def time_observe(chosen: Sequence[str], states: Sequence[SchedulerState]) -> None:
    """The third table: what `observe` costs a policy that learns online (every policy of
    `chosen` that does by default), on the engine run's states in turn, each told it ran in
    1.3× its predicted latency (a machine slower than the predictor): the mean (refits
    amortized), p50 and p99 per call, and how many calls refitted."""
    predictor = default_predictor("a100-80g", "llama3-8b", 1)
    print(f"\nobserve of the learning policies on the same {len(states)} states")
    print(f"{'policy':20s} {'mean µs':>8s} {'p50 µs':>8s} {'p99 µs':>8s}  refits")
    for name in chosen:
        policy = by_name(name, predictor)
        if not isinstance(policy, Online):
            continue
        pstate = policy.init()
        times: list[float] = []
        refits = 0
        for state in states:
            plan, pstate = policy.plan(pstate, state)
            latency = 1.3 * max(plan.predicted_latency, 1e-3)
            before = pstate.learner.predictor
            start = time.perf_counter()
            pstate = policy.observe(pstate, state, plan, latency)
            times.append(time.perf_counter() - start)
            refits += pstate.learner.predictor is not before
        print(
            f"{name:20s} {np.mean(times) * 1e6:8.0f} {percentile(times, 50) * 1e6:8.0f} "
            f"{percentile(times, 99) * 1e6:8.0f}  {refits}"
        )


OVERLOAD_RATE = 10.0
"""Arrivals per second of the successive overloaded states (mixed-v1 at about 8× capacity)."""


def time_overload(policies: Sequence[Policy[Any]], sizes: Sequence[int], repeats: int) -> None:
    """The fourth table, ms per plan at 64 decodes plus N waiting for each N, two ways:
    repeated plans on one state whose waiting requests all have slack left (the first
    plan, which builds the queue's index, apart); and plans on successive states of an
    engine at overload (`OVERLOAD_RATE` arrivals per second, 50 ms apart), each state
    updated from the last, the index with it. p50 over 3 states of `repeats` plans each."""

    def states(n: int, rate: float | None = None) -> list[SchedulerState]:
        """The same 3 states for every policy, each on a queue of its own (no index yet)."""
        rng = np.random.default_rng(11)
        return [overload_state(n, rng, rate) for _ in range(3)]

    header = f"{'policy':20s}" + "".join(f" {f'N={n}':>12s}" for n in sizes)
    print("\noverload: ms per plan at 64 decodes + N waiting (50–4,000 prompt tokens)")
    print("one state, every waiting request with slack left, repeated plans")
    print(header + "   first plan (ms)")
    for policy in policies:
        cells, firsts = [], []
        for n in sizes:
            times: list[float] = []
            first: list[float] = []
            for state in states(n):
                pstate = policy.init()
                start = time.perf_counter()
                policy.plan(pstate, state)
                first.append(time.perf_counter() - start)
                times += measure(partial(policy.plan, pstate, state), repeats)
            cells.append(f" {percentile(times, 50) * 1e3:12.2f}")
            firsts.append(f"{percentile(first, 50) * 1e3:.0f}")
        print(f"{policy.name:20s}" + "".join(cells) + "   " + "/".join(firsts))
    print(f"successive states at {OVERLOAD_RATE:g} arrivals/s, 50 ms apart (most requests late)")
    print(header)
    for policy in policies:
        cells = []
        for n in sizes:
            times = []
            for state in states(n, OVERLOAD_RATE):
                times += successive_times(policy, state, repeats, OVERLOAD_RATE)[1]
            cells.append(f" {percentile(times, 50) * 1e3:12.2f}")
        print(f"{policy.name:20s}" + "".join(cells))


if __name__ == "__main__":
    main()
