"""Per-step cost the vLLM adapter adds on top of vLLM's own `schedule()`.

vLLM 0.32's real `Scheduler` (tiny model config, no model: hand-built outputs) with R
running decodes and W waiting requests, in two cases: *held*, where `max_num_seqs=R` keeps
the W waiting (vLLM admits none while the slots are full, and the adapter then leaves them
out of the policy's snapshot), and *admitted*, where W new requests (64-token prompts, one
output token) arrive before every step and are planned and admitted beside the R decodes.
The same steps are timed with vLLM's class and with the adapter's, for each policy. Prints
p50 of `schedule()` in µs and the adapter's extra cost as a multiple of vLLM's own (the
adapter's target: under 0.5× at 64+32), and the same for `update_from_output()`, where the
adapter feeds the step to the policy's `observe`. Needs the adapter's environment (vLLM
installed): `python bench/vllm_adapter.py`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

# The core's mypy runs without vLLM; the adapter's CI step type-checks these for real.
from slidingpolicy_vllm import SlidingScheduler  # type: ignore[import-not-found, unused-ignore]
from slidingpolicy_vllm.testing import (  # type: ignore[import-not-found, unused-ignore]
    make_request,
    make_scheduler,
    model_output,
    tiny_model,
)
from vllm.utils.gc_utils import freeze_gc_heap  # type: ignore[import-not-found, unused-ignore]
from vllm.v1.core.sched.scheduler import Scheduler  # type: ignore[import-not-found, unused-ignore]

SIZES = ((16, 8), (64, 32), (256, 64))


def step_times(
    cls: type[Scheduler],
    model: Path,
    running: int,
    waiting: int,
    steps: int,
    policy: str,
    admitted: bool,
) -> tuple[list[float], list[float]]:
    """Seconds per `schedule()` and per `update_from_output()` over `steps` steps, once R
    requests are decoding (and, held, W waiting). The garbage collector's heap is frozen
    once the scheduler is built, as vLLM's engine core does after start-up, so that its
    collections walk only what the steps allocate."""
    config = {
        "slidingpolicy": {
            "policy": policy,
            "options": {"token_budget": 8192} if policy == "vllm" else {},
        }
    }
    scheduler = make_scheduler(
        cls,
        model,
        num_blocks=running * 40 + waiting * 8 + 64,
        max_num_batched_tokens=8192,
        max_num_seqs=running + waiting if admitted else running,
        max_model_len=4096,
        additional_config=config,
    )
    freeze_gc_heap()
    start = time.time()
    for i in range(running if admitted else running + waiting):
        scheduler.add_request(make_request(f"r{i}", 64, 4000, start))

    def step() -> tuple[float, float]:
        begin = time.perf_counter()
        output = scheduler.schedule()
        scheduled = time.perf_counter()
        outputs = model_output(scheduler, output)
        updating = time.perf_counter()
        scheduler.update_from_output(output, outputs)
        return scheduled - begin, time.perf_counter() - updating

    while len(scheduler.running) < running or any(
        r.num_output_tokens == 0 for r in scheduler.running
    ):
        step()
    schedules, updates = [], []
    for k in range(steps):
        if admitted:
            for i in range(waiting):
                scheduler.add_request(make_request(f"s{k}.{i}", 3, 1, time.time()))
        took = step()
        schedules.append(took[0])
        updates.append(took[1])
        if admitted and scheduler.waiting:
            raise RuntimeError(f"{policy} left {len(scheduler.waiting)} arrivals waiting")
    return schedules, updates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--policy", action="append", help="repeatable; default three")
    args = parser.parse_args()
    policies = args.policy or ["slidingserve", "sarathi-edf", "qoserve"]
    model = tiny_model(Path(tempfile.mkdtemp()))
    print(f"{'':>32} {'schedule() p50':^33} {'update_from_output() p50':^33}")
    print(
        f"{'R+W':>8} {'waiting':>8} {'policy':>14}"
        + f" {'vLLM µs':>9} {'adapter µs':>11} {'added/vLLM':>11}" * 2
    )
    for admitted in (False, True):
        case = "admitted" if admitted else "held"
        for running, waiting in SIZES:
            times = step_times(Scheduler, model, running, waiting, args.steps, "vllm", admitted)
            own = [statistics.median(t) for t in times]
            for policy in policies:
                times = step_times(
                    SlidingScheduler, model, running, waiting, args.steps, policy, admitted
                )
                cells = "".join(
                    f" {theirs * 1e6:>9.0f} {ours * 1e6:>11.0f} {(ours - theirs) / theirs:>10.2f}×"
                    for theirs, ours in zip(own, map(statistics.median, times), strict=True)
                )
                print(f"{running:>4}+{waiting:<3} {case:>8} {policy:>14}{cells}")


if __name__ == "__main__":
    main()
