"""Run a policy and the engine with the core install alone (no command line, plots, Ray or
oracles): a plan, its check, observations that refit the predictor online, and a short run.

Usage: python scripts/core_example.py   (prints "core ok"; CI runs it in a virtual environment
holding only the built wheel and its core dependencies; tests/test_core_install.py runs it
with only those importable.)
"""

from __future__ import annotations

import sys

from slidingpolicy import Request, SchedulerState, by_name, check_plan, default_predictor
from slidingpolicy.engine import simulate
from slidingpolicy.hardware import build_hardware
from slidingpolicy.workloads import Poisson, make_workload

EXTRAS = ("typer", "rich", "click", "matplotlib", "ray", "cvxpy", "highspy")
"""Modules of the extras: none may be imported by the library or the engine."""


def main() -> None:
    """Plan, check and observe on the README's state, then simulate 20 requests."""
    policy = by_name("slidingserve", default_predictor(), refit_every=2)
    pstate = policy.init()
    decoding = Request(
        "a", 10.0, prompt_tokens=900, prefilled=900, generated=14, ttft_slo=3.0, tbt_slo=0.1
    )
    waiting = Request(
        "b", 11.5, prompt_tokens=2000, prefilled=0, generated=0, ttft_slo=3.0, tbt_slo=0.1
    )
    state = SchedulerState(now=12.0, requests=(decoding, waiting), prefill_throughput=8000.0)
    for latency in (0.041, 0.043, 0.040):
        plan, pstate = policy.plan(pstate, state)
        assert check_plan(state, plan, token_budget=policy.token_budget) == []
        pstate = policy.observe(pstate, state, plan, latency=latency)
    work = make_workload("mixed-v1", 20, Poisson(1.0), seed=0)
    output = simulate(policy, work, build_hardware("rtx3090", "qwen2.5-7b", 2), seed=0)
    assert output.metrics.requests == 20
    loaded = sorted(name for name in EXTRAS if name in sys.modules)
    assert not loaded, f"the core imported {loaded}"
    print("core ok")


if __name__ == "__main__":
    main()
