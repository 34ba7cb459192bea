"""What the embedding loop's refit schedule costs the online learner's accuracy.

Inside an engine, `PolicyLoop` folds and fits each refit on a thread and puts it in force a
fixed number of observations after it fell due (a warm-up scaling at the next, a full refit
`REFIT_LAG` later, one at a time); the offline engine refits inline (`learner.observe`).
Both learn from the same stream of batches, drawn as a loaded engine runs them (0–64
decodes beside 0–2 prefill chunks of 2–2,048 tokens), timed by a machine of another shape
than the prior (the default predictor, qwen2.5-7b on 2× RTX 3090) with log-normal noise
σ = 0.15. Prints, per machine and phase (priced batches seen), the mean over the seeds of
the median |log(y/T̂)| of the predictor in force and the share of batches above its margin.

python scripts/refit_lag.py [--seeds 5] [--batches 3000]
"""

from __future__ import annotations

import argparse

import numpy as np

from slidingpolicy.embedding.refits import REFIT_LAG
from slidingpolicy.policies import learner as learning
from slidingpolicy.predictors import default_predictor
from slidingpolicy.pricing.features import DECODE, batch_features
from slidingpolicy.pricing.model import LatencyPredictor

PHASES = ((0, 64), (64, 500), (500, 3000))


def draw_batch(rng: np.random.Generator) -> tuple[np.ndarray, int]:
    decodes = int(rng.integers(0, 65))
    prefills = int(rng.integers(0 if decodes else 1, 3))
    chunks = [1] * decodes + rng.integers(2, 2049, prefills).tolist()
    contexts = rng.integers(100, 4001, decodes).tolist() + rng.integers(0, 4001, prefills).tolist()
    return batch_features(np.array(chunks), np.array(contexts))


def learn(
    prior: LatencyPredictor, truth: LatencyPredictor, seed: int, batches: int, lagged: bool
) -> list[tuple[float, float]]:
    """(median |log(y/T̂)|, share over the margin) per phase, refits inline or lagged."""
    config = learning.OnlineConfig()
    rng = np.random.default_rng(seed)
    learner = learning.start(prior, config)
    errors, over, seen = [], [], []
    fitting: learning.Refit | None = None
    asked, in_force_at = False, 0
    for observation in range(1, batches + 1):
        x, scenario = draw_batch(rng)
        latency = truth.predict_features(x, scenario) * float(np.exp(0.15 * rng.normal()))
        if scenario != DECODE:
            predicted = learner.predictor.predict_features(x, scenario)
            errors.append(abs(np.log(latency / predicted)))
            over.append(latency > learner.predictor.margin * predicted)
            seen.append(learner.priced)
        if not lagged:
            learner = learning.observe(learner, config, x, scenario, latency)
            continue
        if fitting is not None and observation >= in_force_at:
            learner, fitting = learning.installed(learner, fitting), None
        learner, due = learning.observe_deferring(learner, config, x, scenario, latency)
        asked = asked or due
        if fitting is None and asked:
            learner = learning.hand_over(learner)
            lag = 1 if learning.warming_up(learner, config) else REFIT_LAG
            fitting, asked = learning.refitted(learner, config), False
            in_force_at = observation + lag
    error, miss, priced = np.array(errors), np.array(over), np.array(seen)
    phases = [(priced >= low) & (priced < high) for low, high in PHASES]
    return [(float(np.median(error[p])), float(miss[p].mean())) for p in phases]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--batches", type=int, default=3000)
    args = parser.parse_args()
    prior = default_predictor()
    machines = {
        "h100, llama3-8b": default_predictor("h100", "llama3-8b", 1),
        "a100, qwen2.5-7b, tp 1": default_predictor("a100-80g", "qwen2.5-7b", 1),
        "the prior, 1.7x slower": prior.scaled(1.7),
    }
    print("machine                  refits   " + "   ".join(f"priced {a}-{b}" for a, b in PHASES))
    for name, truth in machines.items():
        for lagged in (False, True):
            runs = [learn(prior, truth, s, args.batches, lagged) for s in range(args.seeds)]
            cells = np.mean(np.array(runs), axis=0)
            row = "   ".join(f"{e:.4f} {100 * o:5.2f}%" for e, o in cells)
            print(f"{name:24s} {'lagged' if lagged else 'inline':8s} {row}")
    print(
        "each cell: median |log(y/T̂)| of the predictor in force, share of batches over its margin"
    )


if __name__ == "__main__":
    main()
