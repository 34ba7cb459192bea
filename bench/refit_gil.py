"""What a refit fitted beside the engine costs the engine's own thread: the GIL.

`PolicyLoop` fits the online learner's refits on a thread of its own (`embedding.refits`),
off the step's path; but a fit is mostly Python (scipy's bounded least squares), and while
it runs it holds the interpreter's lock, which the engine's thread then waits for. This
times a fixed piece of the engine thread's work (pricing 64 batches with the predictor, as a
policy's plan does) again and again, alone, beside a thread that fits refits back to back,
and beside a process that does (no lock shared), and prints p50 and p99 of each.

python bench/refit_gil.py [--repeats 3000] [--observations 1000]
"""

from __future__ import annotations

import argparse
import multiprocessing
import threading
import time
from collections.abc import Callable
from multiprocessing.synchronize import Event as ProcessEvent

import numpy as np

from slidingpolicy.policies import learner as learning
from slidingpolicy.predictors import default_predictor
from slidingpolicy.pricing.features import batch_features
from slidingpolicy.pricing.model import LatencyPredictor

Batch = tuple[np.ndarray, int]


def batches(count: int, seed: int) -> list[Batch]:
    """Batches as a loaded engine runs them: 0-64 decodes beside 0-2 prefill chunks."""
    rng = np.random.default_rng(seed)
    drawn = []
    for _ in range(count):
        decodes = int(rng.integers(0, 65))
        prefills = int(rng.integers(0 if decodes else 1, 3))
        chunks = [1] * decodes + rng.integers(2, 2049, prefills).tolist()
        contexts = [*rng.integers(100, 4001, decodes), *rng.integers(0, 4001, prefills)]
        drawn.append(batch_features(np.array(chunks), np.array(contexts)))
    return drawn


def trained(observations: int) -> learning.Learner:
    """A learner past its warm-up, as `observations` batches of a 1.3x slower machine left it."""
    prior, config = default_predictor(), learning.OnlineConfig()
    truth, learner = prior.scaled(1.3), learning.start(prior, config)
    for x, scenario in batches(observations, 0):
        latency = truth.predict_features(x, scenario)
        learner = learning.observe(learner, config, x, scenario, latency)
    return learner


def fit_until(stop: threading.Event | ProcessEvent, learner: learning.Learner) -> None:
    """Fit refits of `learner` back to back until `stop` is set."""
    config = learning.OnlineConfig()
    while not stop.is_set():
        learning.fitted(learner, config)


def timed(work: Callable[[], object], repeats: int) -> np.ndarray:
    """Seconds each of `repeats` calls of `work` took."""
    times = np.empty(repeats)
    for k in range(repeats):
        start = time.perf_counter()
        work()
        times[k] = time.perf_counter() - start
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=3000)
    parser.add_argument("--observations", type=int, default=1000)
    args = parser.parse_args()
    learner = trained(args.observations)
    predictor: LatencyPredictor = learner.predictor
    step = batches(64, 1)

    def work() -> None:
        for x, scenario in step:
            predictor.predict_features(x, scenario)

    start = time.perf_counter()
    learning.fitted(learner, learning.OnlineConfig())
    print(f"one full refit: {1e3 * (time.perf_counter() - start):.2f} ms")
    timed(work, args.repeats // 10)
    rows = {"alone": timed(work, args.repeats)}
    stop = threading.Event()
    thread = threading.Thread(target=fit_until, args=(stop, learner))
    thread.start()
    rows["beside a fitting thread"] = timed(work, args.repeats)
    stop.set()
    thread.join()
    halt = multiprocessing.get_context("spawn").Event()
    process = multiprocessing.get_context("spawn").Process(target=fit_until, args=(halt, learner))
    process.start()
    time.sleep(3.0)
    rows["beside a fitting process"] = timed(work, args.repeats)
    halt.set()
    process.join()
    print(f"pricing {len(step)} batches, {args.repeats} times, ms:")
    print(f"{'':26s} {'p50':>7s} {'p99':>7s} {'max':>7s}")
    for name, times in rows.items():
        p50, p99 = np.percentile(times, [50, 99]) * 1e3
        print(f"{name:26s} {p50:7.3f} {p99:7.3f} {1e3 * times.max():7.3f}")


if __name__ == "__main__":
    main()
