"""Print the latency-shape table of every built-in hardware model and draw its figure
(docs/hardware-shape.png), for docs/hardware.md. Needs no data files.

Usage: python scripts/hardware_shape.py [--figure docs/hardware-shape.png]

One iteration: a prefill chunk of c tokens (nothing cached) plus 0 or 64 decodes with 1024
cached tokens each; noise-free latency in ms.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from slidingpolicy.hardware import HardwareModel, build_hardware

CHUNKS = (64, 128, 136, 256, 264, 512, 520, 2048)
DECODES = (0, 64)
DECODE_CONTEXT = 1024
SETUPS = (
    ("qwen2.5-7b", 2, ("rtx3090", "rtx3090-quantized")),
    ("llama3-8b", 1, ("a100-80g", "a100-80g-quantized", "a100-80g-measured")),
    ("llama3-8b", 1, ("h100", "h100-quantized")),
)
"""(model, TP, hardware names): each GPU with the model and TP it is used with here."""
FIGURE = Path(__file__).resolve().parents[1] / "docs" / "hardware-shape.png"


def iteration_ms(hw: HardwareModel, chunk: int, decodes: int) -> float:
    """Noise-free ms of one chunk of `chunk` tokens and `decodes` decodes."""
    chunks = np.array([chunk] + [1] * decodes, dtype=np.int64)
    contexts = np.array([0] + [DECODE_CONTEXT] * decodes, dtype=np.int64)
    return 1e3 * hw.latency(chunks, contexts)


def table() -> None:
    """The Markdown table: one row per (hardware, decodes), one column per chunk."""
    print("| hardware | model, TP | decodes | " + " | ".join(map(str, CHUNKS)) + " |")
    print("| --- | --- | --- |" + " ---: |" * len(CHUNKS))
    for model, tp, names in SETUPS:
        for name in names:
            hw = build_hardware(name, model, tp)
            for decodes in DECODES:
                cells = " | ".join(f"{iteration_ms(hw, c, decodes):.1f}" for c in CHUNKS)
                print(f"| {name} | {model}, TP{tp} | {decodes} | {cells} |")
    print()
    print("| hardware | 136 / 128 | 264 / 256 | 520 / 512 |")
    print("| --- | ---: | ---: | ---: |")
    for model, tp, names in SETUPS:
        for name in names:
            hw = build_hardware(name, model, tp)
            ratios = [
                iteration_ms(hw, b, 0) / iteration_ms(hw, a, 0)
                for a, b in ((128, 136), (256, 264), (512, 520))
            ]
            print(f"| {name} | " + " | ".join(f"{r:.2f}" for r in ratios) + " |")


def figure(path: Path) -> None:
    """Iteration latency against chunk size, one panel per GPU."""
    chunks = np.arange(1, 1101)
    fig, axes = plt.subplots(1, len(SETUPS), figsize=(15, 4.2))
    for axis, (model, tp, names) in zip(axes, SETUPS, strict=True):
        for name in names:
            hw = build_hardware(name, model, tp)
            ms = [iteration_ms(hw, int(c), 0) for c in chunks]
            axis.plot(chunks, ms, label=name, drawstyle="steps-pre", linewidth=1.2)
        axis.set_title(f"{model}, TP{tp}")
        axis.set_xlabel("prefill chunk (tokens), no decodes")
        axis.set_ylabel("iteration latency (ms)")
        axis.set_xticks(range(0, 1101, 128))
        axis.grid(alpha=0.3)
        axis.legend()
    fig.suptitle("Latency shape of the built-in hardware models (noise-free)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    print(f"wrote {path}")


def main() -> None:
    """Print the tables, draw the figure."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--figure", type=Path, default=FIGURE, help="the PNG to write")
    args = parser.parse_args()
    table()
    figure(args.figure)


if __name__ == "__main__":
    main()
