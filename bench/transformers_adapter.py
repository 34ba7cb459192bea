"""Per-step cost the transformers adapter adds to the engine's own `schedule_batch`.

The same open-loop workload (Poisson arrivals, prompts of 64–1024 tokens, 16–64 tokens out)
runs on transformers' continuous batching twice or more: under the engine's FIFO and under
each policy given, with a model shape of random weights on this machine (default the CPU
shape `qwen2-small`). Every step's `schedule_batch` is timed (for a policy: its snapshot, plan,
check and hand-over to the engine) and so is `clear_cancelled_requests`, where the adapter
observes the previous step; a step's own time runs from the end of its scheduling to the
engine's next call (as the adapter measures it).
Prints, per arm, p50 and p99 of each in µs, the median step in ms, and the adapter's added cost
(its two calls beyond FIFO's, at p50 and p99) as a share of FIFO's median step (the goal:
<= 5% at the knee). Needs the adapter's environment: `python bench/transformers_adapter.py`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np

# The core's mypy runs without transformers; the adapter's CI step type-checks these for real.
from slidingpolicy_transformers.engine import (  # type: ignore[import-not-found, unused-ignore]
    Engine,
    EngineSettings,
)
from slidingpolicy_transformers.testing import (  # type: ignore[import-not-found, unused-ignore]
    Job,
    drive,
)
from transformers.generation.continuous_batching.scheduler import (  # type: ignore[import-not-found, unused-ignore]
    SCHEDULER_MAPPING,
)

from slidingpolicy.replay.shapes import shape_names, write_shape

Timings = dict[str, list[float]]


def timed(cls: type[Any], timings: Timings) -> type[Any]:
    """`cls` with `schedule_batch` and `clear_cancelled_requests` timed into `timings`, and
    each step's time (`step`: from the end of its `schedule_batch` to the engine's next call,
    once its output is applied, as the adapter measures it) kept."""
    scheduled: list[float] = []

    def wrap(name: str) -> Callable[..., Any]:
        inner = getattr(cls, name)

        def call(self: Any, *args: Any) -> Any:
            begin = time.perf_counter()
            if name == "clear_cancelled_requests" and scheduled:
                timings["step"].append(begin - scheduled.pop())
            result = inner(self, *args)
            end = time.perf_counter()
            timings[name].append(end - begin)
            if name == "schedule_batch" and result[0]:
                scheduled.append(end)
            return result

        return call

    return type(f"Timed{cls.__name__}", (cls,), {n: wrap(n) for n in ("schedule_batch",
                "clear_cancelled_requests")})  # fmt: skip


def workload(count: int, rate: float, seed: int) -> list[Job]:
    """`count` requests, Poisson at `rate` per second."""
    rng = np.random.default_rng(seed)
    arrivals = np.cumsum(rng.exponential(1.0 / rate, count))
    prompts = rng.integers(64, 1025, count)
    outputs = rng.integers(16, 65, count)
    return [
        Job(int(p), int(o), float(a)) for p, o, a in zip(prompts, outputs, arrivals, strict=True)
    ]


def run(model: Path, arm: str, jobs: Sequence[Job], blocks: int) -> Timings:
    """The timings of one run of `jobs` under `arm`."""
    timings: Timings = {"schedule_batch": [], "clear_cancelled_requests": [], "step": []}
    engine = Engine(EngineSettings(model, arm, {"ttft_slo": 3.0, "tbt_slo": 0.15}, blocks))
    config = engine.manager.continuous_batching_config
    kind = config.scheduler_type
    SCHEDULER_MAPPING[f"timed-{kind}"] = timed(SCHEDULER_MAPPING[kind], timings)
    config.scheduler_type = f"timed-{kind}"
    done = drive(engine, jobs, timeout=600.0)
    if len(done) < len(jobs):
        raise SystemExit(f"{arm}: {len(jobs) - len(done)} requests did not finish")
    return timings


def _us(values: Sequence[float], q: float) -> float:
    return float(np.quantile(values, q)) * 1e6 if values else float("nan")


def _decision_us(timings: Timings, q: float) -> float:
    """Schedule plus clear at quantile q, summed the same way for every arm, so that FIFO's
    own row is exactly 0 (never a rounding -0.0%)."""
    return _us(timings["schedule_batch"], q) + _us(timings["clear_cancelled_requests"], q)


def main() -> None:
    """Run FIFO and each policy on one workload and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", choices=shape_names(), default="qwen2-small")
    parser.add_argument("--policies", default="slidingserve+,sarathi-edf")
    parser.add_argument("-n", "--requests", type=int, default=200)
    parser.add_argument("--rate", type=float, default=2.0, help="req/s (near the knee)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--num-blocks", type=int, default=2048)
    arguments = parser.parse_args()
    jobs = workload(arguments.requests, arguments.rate, arguments.seed)
    with tempfile.TemporaryDirectory() as folder:
        model = write_shape(arguments.shape, Path(folder) / arguments.shape)
        arms = ["native", *arguments.policies.split(",")]
        results = {arm: run(model, arm, jobs, arguments.num_blocks) for arm in arms}
    native = results["native"]
    median_step = statistics.median(native["step"])
    print(f"{arguments.shape}, {arguments.requests} requests at {arguments.rate:g} req/s")
    print(f"{'arm':<16} {'steps':>6} {'schedule p50':>12} {'p99':>6} {'clear p50':>9} "
          f"{'p99':>6} {'step p50 ms':>11} {'p99':>6} {'added p50':>9} {'p99':>6}")  # fmt: skip
    for arm, t in results.items():
        schedule, clear, step = t["schedule_batch"], t["clear_cancelled_requests"], t["step"]
        added = [
            (_decision_us(t, q) - _decision_us(native, q)) / 1e6 / median_step for q in (0.5, 0.99)
        ]
        print(
            f"{arm:<16} {len(step):>6} {_us(schedule, 0.5):>12.0f} {_us(schedule, 0.99):>6.0f} "
            f"{_us(clear, 0.5):>9.0f} {_us(clear, 0.99):>6.0f} "
            f"{1e3 * statistics.median(step):>11.1f} {1e3 * np.quantile(step, 0.99):>6.0f} "
            f"{100 * added[0]:>8.2f}% {100 * added[1]:>5.1f}%"
        )
    print("µs per call; added: the arm's schedule + clear beyond FIFO's, at p50 and at p99,")
    print("as a share of FIFO's median step")


if __name__ == "__main__":
    main()
