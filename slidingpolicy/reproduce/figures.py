"""The report's PNG figures, drawn from `results.json` alone (matplotlib, Agg backend)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes

from slidingpolicy._paths import StrPath
from slidingpolicy.figures.plots import LINESTYLES, MARKERS, _save
from slidingpolicy.reproduce import paper
from slidingpolicy.reproduce.experiments import UNIT_POLICY, rows_of
from slidingpolicy.reproduce.presets import DATASETS, LOAD_POLICIES, PAPER_ABLATION, POLICIES
from slidingpolicy.reproduce.report_cells import FIGURES, Capacities, Limits

Row = dict[str, Any]

LABELS = {"ttft_p99": "p99 TTFT (s)"}


def _grid(count: int, columns: int = 4, width: float = 4.2) -> tuple[Any, list[Axes]]:
    cols = min(columns, count)
    rows = math.ceil(count / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, 3.4 * rows), squeeze=False)
    flat = list(axes.flat)
    for extra in flat[count:]:
        extra.set_visible(False)
    return fig, flat[:count]


def _style(i: int) -> dict[str, Any]:
    return {"marker": MARKERS[i % len(MARKERS)], "linestyle": LINESTYLES[i % len(LINESTYLES)]}


def capacity_figure(results: Row, path: StrPath) -> None:
    """Fig. 4: mean capacity per policy and data set, min–max bars, one panel per setting."""
    caps = Capacities(results["capacity"])
    keys = [s["key"] for s in results["config"]["settings"]]
    fig, axes = _grid(len(keys), columns=1, width=10.0)
    width = 0.8 / len(POLICIES)
    for axis, key in zip(axes, keys, strict=True):
        x = np.arange(len(DATASETS))
        for i, policy in enumerate(POLICIES):
            values = [caps.values(key, d, policy) for d in DATASETS]
            means = [sum(v) / len(v) for v in values]
            low = [m - min(v) for m, v in zip(means, values, strict=True)]
            high = [max(v) - m for m, v in zip(means, values, strict=True)]
            axis.bar(x + (i - len(POLICIES) / 2 + 0.5) * width, means, width, label=policy)
            axis.errorbar(
                x + (i - len(POLICIES) / 2 + 0.5) * width,
                means,
                yerr=[low, high],
                fmt="none",
                color="black",
                linewidth=0.8,
            )
        axis.set_xticks(x, DATASETS)
        axis.set(ylabel="capacity (req/s)", title=key)
    axes[0].legend(ncol=4, fontsize=7, loc="upper left")
    for axis in axes:
        axis.margins(y=0.25)
    fig.suptitle("capacity at ≥ 99% SLO attainment (mean over seeds, min–max)")
    _save(fig, path)


def limit_figure(results: Row, path: StrPath) -> None:
    """Each policy's mean capacity as a share of the case's bound, one panel per setting."""
    caps, limits = Capacities(results["capacity"]), Limits(results["limits"])
    keys = [s["key"] for s in results["config"]["settings"]]
    fig, axes = _grid(len(keys), columns=1, width=10.0)
    width = 0.8 / len(POLICIES)
    for axis, key in zip(axes, keys, strict=True):
        x = np.arange(len(DATASETS))
        for i, policy in enumerate(POLICIES):
            shares = [100.0 * limits.share(caps, key, d, policy) for d in DATASETS]
            axis.bar(x + (i - len(POLICIES) / 2 + 0.5) * width, shares, width, label=policy)
        axis.axhline(100.0, color="black", linewidth=1.0)
        axis.set_xticks(x, DATASETS)
        axis.set(ylabel="% of the limit", title=key, ylim=(0.0, 110.0))
    axes[0].legend(ncol=4, fontsize=7, loc="lower left")
    fig.suptitle("capacity as a share of the limit (the fluid bound; mean over seeds)")
    _save(fig, path)


def load_figure(results: Row, path: StrPath, field: str = "violation") -> None:
    """Fig. 5: the violation rate (or a latency percentile, `field`) against load, one panel
    per case."""
    rows: list[Row] = results["load"]
    cases = list(dict.fromkeys((r["setting"], r["dataset"]) for r in rows))
    fig, axes = _grid(len(cases))
    scale, label = (100.0, "SLO violations (%)") if field == "violation" else (1.0, LABELS[field])
    for axis, (key, dataset) in zip(axes, cases, strict=True):
        for i, policy in enumerate(LOAD_POLICIES):
            mine = rows_of(rows, key, dataset, policy)
            loads = sorted({r["load"] for r in mine})
            values = [
                scale * float(np.mean([r[field] for r in mine if r["load"] == x])) for x in loads
            ]
            axis.plot(loads, values, label=policy, **_style(i))
        axis.set(xlabel=f"load (× {UNIT_POLICY} capacity)", ylabel=label, title=f"{key}, {dataset}")
        if field != "violation":
            axis.set_yscale("log")
    axes[0].legend(fontsize=7)
    _save(fig, path)


def latency_figure(results: Row, path: StrPath) -> None:
    """Fig. 5's tail: p99 TTFT (s) against load."""
    load_figure(results, path, "ttft_p99")


def burst_figure(results: Row, path: StrPath) -> None:
    """Fig. 6: violation rate per arrival bin through the burst, one panel per case."""
    rows: list[Row] = results["burst"]
    shape = results["config"]["burst"]
    cases = list(dict.fromkeys((r["setting"], r["dataset"]) for r in rows))
    fig, axes = _grid(len(cases), columns=2)
    for axis, (key, dataset) in zip(axes, cases, strict=True):
        for i, policy in enumerate(LOAD_POLICIES):
            mine = rows_of(rows, key, dataset, policy)
            counts = np.sum([np.asarray(r["bins"], dtype=np.float64) for r in mine], axis=0)
            starts = shape["bin"] * np.arange(len(counts))
            rate = 100 * counts[:, 1] / np.maximum(counts[:, 0], 1.0)
            axis.plot(starts + shape["bin"] / 2, rate, label=policy, **_style(i))
        axis.axvspan(shape["start"], shape["start"] + shape["duration"], color="grey", alpha=0.2)
        axis.set(xlabel="arrival time (s)", ylabel="SLO violations (%)", title=f"{key}, {dataset}")
    axes[0].legend(fontsize=7)
    fig.suptitle(
        f"{shape['base']:g}× → {shape['peak']:g}× → {shape['base']:g}× capacity (grey: the burst)"
    )
    _save(fig, path)


def ablation_figure(results: Row, path: StrPath) -> None:
    """Table 4: each piece's gain over Sarathi-EDF, ours per case beside the paper's."""
    caps = Capacities(results["capacity"])
    cases = [tuple(c) for c in results["config"]["ablation_cases"]]
    labels = list(PAPER_ABLATION)
    width = 0.8 / (len(cases) + 1)
    fig, axis = plt.subplots(figsize=(8, 4.2))
    x = np.arange(len(labels))
    axis.bar(
        x - 0.4 + width / 2, [100 * paper.ABLATION[p] for p in labels], width, label="the paper"
    )
    for j, (key, dataset) in enumerate(cases, 1):
        gains = [100 * (caps.ratio(key, dataset, p, "sarathi-edf")[0] - 1) for p in labels]
        axis.bar(x - 0.4 + (j + 0.5) * width, gains, width, label=f"{key}, {dataset}")
    axis.axhline(0, color="black", linewidth=0.8)
    axis.set_xticks(x, labels, rotation=15)
    axis.set(ylabel="capacity over sarathi-edf (%)", title="ablation (Table 4)")
    axis.legend(fontsize=7)
    _save(fig, path)


def draw(results: Row, folder: StrPath) -> list[Path]:
    """Every figure of the report into `folder`; the paths written."""
    folder = Path(folder)
    drawn: Sequence[tuple[Any, str]] = (
        (capacity_figure, FIGURES["capacity"]),
        (load_figure, FIGURES["load"]),
        (latency_figure, FIGURES["latency"]),
        (burst_figure, FIGURES["burst"]),
        (ablation_figure, FIGURES["ablation"]),
        *([(limit_figure, FIGURES["limit"])] if results.get("limits") else []),
    )
    paths = []
    for function, name in drawn:
        function(results, folder / name)
        paths.append(folder / name)
    return paths
