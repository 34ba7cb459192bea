"""Predictor accuracy on the batches an engine run executes, per scenario and prefill-size class.

For each hardware model: one run of a policy (slidingserve+ by default) on mixed-v1, every
executed batch recorded with its measured latency (`runs.batches`), and each predictor's
MAE, bias (T̂ − y) and R² on them: the hardware's own calibrated predictor, and any predictor
files given with --compare (e.g. an older calibration) as LABEL=PATH.

    .venv/bin/python scripts/predictor_accuracy.py
    .venv/bin/python scripts/predictor_accuracy.py --hardware rtx3090 --compare before=old.json
"""

from __future__ import annotations

import argparse

from slidingpolicy.pricing import LatencyPredictor, evaluate
from slidingpolicy.runs.batches import engine_samples
from slidingpolicy.runs.specs import HardwareSpec, RunSpec, WorkloadSpec

HARDWARE = (
    ("rtx3090", "qwen2.5-7b", 2),
    ("rtx3090-quantized", "qwen2.5-7b", 2),
    ("a100-80g", "llama3-8b", 1),
    ("a100-80g-quantized", "llama3-8b", 1),
    ("a100-80g-measured", "llama3-8b", 1),
)
"""The paper's setting on the smooth and the quantized roofline, and the A100 beside its
measured profile."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hardware", action="append", help="gpu:model:tp (repeatable)")
    parser.add_argument("--compare", action="append", default=[], help="LABEL=PATH")
    parser.add_argument("--policy", default="slidingserve+")
    parser.add_argument("--rate", type=float, default=1.0)
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    chosen = [tuple(h.split(":")) for h in args.hardware] if args.hardware else list(HARDWARE)
    for gpu, model, tp in chosen:
        hardware = HardwareSpec(str(gpu), str(model), int(tp))
        spec = RunSpec(
            args.policy, hardware, WorkloadSpec("mixed-v1", args.requests), seed=args.seed
        ).with_rate(args.rate)
        samples = engine_samples(spec)
        predictors = {"calibrated": hardware.predictor()}
        for item in args.compare:
            name, _, path = item.partition("=")
            predictors[name] = LatencyPredictor.load(path)
        reports = {name: evaluate(p, samples) for name, p in predictors.items()}
        print(
            f"\n{hardware.build().name}: {len(samples)} batches of {args.policy} on mixed-v1, "
            f"{args.requests} requests at {args.rate:g} req/s, seed {args.seed}\n"
        )
        header = "| batches | n |" + "".join(f" {name} MAE | bias | R² |" for name in predictors)
        print(header)
        print("|---|---|" + "---|---|---|" * len(predictors))
        first = reports["calibrated"]
        for i, group in enumerate(first):
            cells = "".join(
                f" {1e3 * r[i].mae:.2f} | {1e3 * r[i].bias:+.2f} | {r[i].r2:.3f} |"
                for r in reports.values()
            )
            print(f"| {group.scenario} | {group.samples} |{cells}")
    print("\nMAE and bias in ms; bias = T̂ − measured, so negative is under-predicted.")


if __name__ == "__main__":
    main()
