"""Per-step cost the vLLM adapter adds to a running vLLM engine: the decision's added cost
against the engine's median step, at p50 and p99.

One in-process vLLM engine per arm (the CPU build, the tiny OPT shape with dummy weights, or
a model folder given) generates the same requests, all at once or arriving open-loop at
`--rate` (Poisson; at the knee, the highest rate at which vLLM's own scheduler still starts
~99% of requests within the 3 s TTFT SLO, as the table's last column shows): under vLLM's
own `Scheduler` and under the adapter's `SlidingScheduler` with each policy given,
synchronous scheduling. Every
step's `schedule()` and `update_from_output()` are timed (for a policy: the loop's snapshot,
plan and check, and its observation of the step, the online learner's refits included),
and so is the step itself, from the end of `schedule()` to the start of
`update_from_output()`. Prints, per arm, p50 and p99 of each in µs, the median step in ms,
and the adapter's added cost (its two calls beyond vLLM's own, at p50 and at p99) as a share
of vLLM's median step (the goal: <= 5%). Needs the vLLM adapter's environment:
`VLLM_ENABLE_V1_MULTIPROCESSING=0 python bench/vllm_engine.py`.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")

import numpy as np

# The core's mypy runs without vLLM; the adapter's CI step type-checks these for real.
from slidingpolicy_vllm import SlidingScheduler  # type: ignore[import-not-found, unused-ignore]
from slidingpolicy_vllm.door import DOOR  # type: ignore[import-not-found, unused-ignore]
from slidingpolicy_vllm.testing import tiny_model  # type: ignore[import-not-found, unused-ignore]
from vllm import (  # type: ignore[import-not-found, unused-ignore]
    LLM,
    RequestOutput,
    SamplingParams,
)
from vllm.inputs import TokensPrompt  # type: ignore[import-not-found, unused-ignore]
from vllm.v1.core.sched.scheduler import (  # type: ignore[import-not-found, unused-ignore]
    Scheduler,
)

Timings = dict[str, list[float]]
CALLS = ("schedule", "update_from_output")
TTFT_SLO = 3.0


def timed(cls: type[Any], timings: Timings) -> type[Any]:
    """`cls` with its two calls timed into `timings`, and each step's own time kept."""
    ended: list[float] = []

    def wrap(name: str) -> Any:
        inner = getattr(cls, name)

        def call(self: Any, *args: Any, **kwargs: Any) -> Any:
            begin = time.perf_counter()
            if name == "update_from_output" and ended:
                timings["step"].append(begin - ended.pop())
            result = inner(self, *args, **kwargs)
            end = time.perf_counter()
            timings[name].append(end - begin)
            if name == "schedule" and result.total_num_scheduled_tokens:
                ended.append(end)
            return result

        return call

    return type(f"Timed{cls.__name__}", (cls,), {name: wrap(name) for name in CALLS})


def run(model: Path, arm: str, requests: int, seed: int, rate: float | None) -> Timings:
    """The timings of one engine generating the workload under `arm` (`vllm`: its own), the
    requests all at once or arriving at `rate` per second (Poisson); `ttft` the time to
    each request's first token, from its arrival."""
    timings: Timings = {"schedule": [], "update_from_output": [], "step": [], "ttft": []}
    base = Scheduler if arm == "vllm" else SlidingScheduler
    rng = np.random.default_rng(seed)
    prompts: list[TokensPrompt] = [
        {"prompt_token_ids": [5 + k % 400 for k in range(int(n))]}
        for n in rng.integers(64, 700, requests)
    ]
    params = [
        SamplingParams(max_tokens=int(n), ignore_eos=True, extra_args={"ttft_slo": TTFT_SLO})
        for n in rng.integers(16, 64, requests)
    ]
    gaps = rng.exponential(1.0 / rate, requests) if rate else np.zeros(requests)
    arrivals = np.cumsum(gaps) - gaps[0]
    config = {"slidingpolicy": {"policy": arm}} if arm != "vllm" else {}
    llm = LLM(model=str(model), load_format="dummy", skip_tokenizer_init=True,
              enforce_eager=True, gpu_memory_utilization=0.15, max_model_len=1024,
              max_num_batched_tokens=2048, max_num_seqs=32, async_scheduling=False,
              scheduler_cls=timed(base, timings), logits_processors=[DOOR], seed=0,
              additional_config=config)  # fmt: skip
    engine, sent, first = llm.llm_engine, 0, set()
    start = time.perf_counter()
    while sent < requests or engine.has_unfinished_requests():
        now = time.perf_counter() - start
        while sent < requests and arrivals[sent] <= now:
            engine.add_request(str(sent), prompts[sent], params[sent])
            sent += 1
        if not engine.has_unfinished_requests():
            time.sleep(max(0.0, min(arrivals[sent] - now, 0.01)))
            continue
        outputs = engine.step()
        done = time.perf_counter() - start
        for output in outputs:
            started = isinstance(output, RequestOutput) and output.outputs[0].token_ids
            if started and output.request_id not in first:
                first.add(output.request_id)
                timings["ttft"].append(done - arrivals[int(output.request_id)])
    del llm
    gc.collect()
    return timings


def _us(values: list[float], q: float) -> float:
    return float(np.quantile(values, q)) * 1e6 if values else float("nan")


def main() -> None:
    """Run vLLM's scheduler and each policy on one workload and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=None, help="a model folder (default: tiny)")
    parser.add_argument("--policies", default="slidingserve+,sarathi-edf")
    parser.add_argument("-n", "--requests", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--rate", type=float, default=None, help="Poisson arrivals a second (default: all at once)"
    )
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        model = arguments.model or tiny_model(Path(folder) / "tiny")
        arms = ["vllm", *arguments.policies.split(",")]
        results = {
            arm: run(model, arm, arguments.requests, arguments.seed, arguments.rate) for arm in arms
        }
    own = results["vllm"]
    median_step = statistics.median(own["step"])
    arriving = f"at {arguments.rate} req/s" if arguments.rate else "at once"
    print(f"{model.name}, {arguments.requests} requests {arriving}, synchronous scheduling")
    print(f"{'arm':<16} {'steps':>6} {'schedule p50':>12} {'p99':>6} {'update p50':>10} "
          f"{'p99':>6} {'step p50 ms':>11} {'p99':>6} {'added p50':>9} {'p99':>6} "
          f"{'TTFT ok':>7}")  # fmt: skip
    for arm, t in results.items():
        added = [
            sum(_us(t[c], q) - _us(own[c], q) for c in CALLS) / 1e6 / median_step
            for q in (0.5, 0.99)
        ]
        step = t["step"]
        print(
            f"{arm:<16} {len(step):>6} {_us(t['schedule'], 0.5):>12.0f} "
            f"{_us(t['schedule'], 0.99):>6.0f} {_us(t['update_from_output'], 0.5):>10.0f} "
            f"{_us(t['update_from_output'], 0.99):>6.0f} "
            f"{1e3 * statistics.median(step):>11.1f} {1e3 * np.quantile(step, 0.99):>6.0f} "
            f"{100 * added[0]:>8.2f}% {100 * added[1]:>5.1f}% "
            f"{100 * sum(x <= TTFT_SLO for x in t['ttft']) / arguments.requests:>6.1f}%"
        )
    print("µs per call; added: the arm's schedule + update beyond vLLM's own, at p50 and at p99,")
    print("as a share of vLLM's median step; TTFT ok: requests whose first token came within")
    print(f"{TTFT_SLO:g} s of their arrival (at the knee, vLLM's own starts nearly all in time)")


if __name__ == "__main__":
    main()
