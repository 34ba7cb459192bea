"""PNG figures of sweeps and capacities (matplotlib, Agg backend: no display needed)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from slidingpolicy.engine.capacity import CapacityResult
from slidingpolicy.engine.metrics import SLO_TARGET
from slidingpolicy.engine.sweep import RunSummary


def plot_sweep(runs: Sequence[RunSummary], path: Path, title: str = "") -> None:
    """SLO attainment and p99 TTFT against the request rate, one line per policy."""
    policies = list(dict.fromkeys(r.spec.policy for r in runs))
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for policy in policies:
        mine = sorted((r for r in runs if r.spec.policy == policy), key=lambda r: r.spec.rate)
        rates = [r.spec.rate for r in mine]
        left.plot(rates, [100 * r.metrics.attainment for r in mine], marker="o", label=policy)
        right.plot(rates, [r.metrics.ttft_p99 for r in mine], marker="o", label=policy)
    left.axhline(100 * SLO_TARGET, color="grey", linestyle="--", linewidth=1)
    left.set(xlabel="request rate (req/s)", ylabel="SLO attainment (%)", title="attainment")
    right.set(xlabel="request rate (req/s)", ylabel="p99 TTFT (s)", title="p99 TTFT")
    right.set_yscale("log")
    left.legend(fontsize=8)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_capacity(results: Sequence[CapacityResult], path: Path, title: str = "") -> None:
    """Capacity (goodput at 99% attainment) per policy, as bars."""
    fig, ax = plt.subplots(figsize=(max(5.0, 0.9 * len(results) + 2), 4))
    names = [r.policy for r in results]
    ax.bar(names, [r.capacity for r in results], color="tab:blue")
    for i, r in enumerate(results):
        ax.text(i, r.capacity, f"{r.capacity:.2f}", ha="center", va="bottom", fontsize=8)
    ax.set(ylabel="capacity (req/s at ≥99% SLO attainment)", title=title or "capacity")
    ax.tick_params(axis="x", labelrotation=30)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
