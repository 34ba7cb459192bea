"""PNG figures of runs, sweeps and capacities (matplotlib, Agg backend: no display needed).

Every figure is written atomically (a temporary file, then a rename).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from slidingpolicy._io import replace_atomically
from slidingpolicy._paths import StrPath
from slidingpolicy.metrics import SLO_TARGET, RequestOutcome
from slidingpolicy.runs.specs import RunSpec, RunSummary
from slidingpolicy.workloads import Workload, dataset_slo
from slidingpolicy.workloads.make import sources_of
from slidingpolicy.workloads.slos import INTERACTIVE

MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
LINESTYLES = ("-", "--", "-.", ":")


def _save(
    fig: Figure, path: StrPath, rect: tuple[float, float, float, float] = (0, 0, 1, 1)
) -> None:
    fig.tight_layout(rect=rect)
    with replace_atomically(path) as temporary:
        fig.savefig(temporary, dpi=110, format="png")
    plt.close(fig)


def _plain_log_axis(axis: Axes) -> None:
    """A log y axis labelled 1, 2, 3, 5, 10... rather than 3×10⁰."""
    axis.set_yscale("log")
    axis.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 3.0, 5.0)))
    axis.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    axis.yaxis.set_minor_formatter(NullFormatter())


def _label_line(axis: Axes, y: float, text: str) -> None:
    """`text` just above the right end of the horizontal reference line at `y`."""
    axis.annotate(
        text,
        xy=(0.99, y),
        xycoords=("axes fraction", "data"),
        xytext=(0, 3),
        textcoords="offset points",
        ha="right",
        color="dimgrey",
        fontsize=8,
        bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8, "pad": 1},
    )


def ttft_slos(spec: RunSpec) -> list[tuple[str, float]]:
    """The TTFT SLOs of a run's requests, labelled: per data set, or the interactive tier's."""
    workload = spec.workload
    if workload.slo_tiers:
        return [("interactive tier", INTERACTIVE.ttft * workload.slo_scale)]
    sources = (workload.slo_source,) if workload.trace is not None else sources_of(workload.name)
    return [(source, dataset_slo(source, workload.slo_scale).ttft) for source in sources]


def plot_sweep(runs: Sequence[RunSummary], path: StrPath, title: str = "") -> None:
    """SLO attainment and p99 TTFT against the request rate, one line per policy.

    Each policy has its own marker and line style, and markers shrink down the legend, so
    that policies with identical results stay visible one inside the other."""
    policies = list(dict.fromkeys(r.spec.label for r in runs))
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 5.2))
    for i, policy in enumerate(policies):
        mine = sorted((r for r in runs if r.spec.label == policy), key=lambda r: r.spec.rate)
        rates = [r.spec.rate for r in mine]
        style = {
            "marker": MARKERS[i % len(MARKERS)],
            "linestyle": LINESTYLES[i % len(LINESTYLES)],
            "markersize": 11 - 6 * i / max(1, len(policies) - 1),
            "markerfacecolor": "none" if i % 2 else None,
            "label": policy,
        }
        left.plot(rates, [100 * r.metrics.attainment for r in mine], **style)
        right.plot(rates, [r.metrics.ttft_p99 for r in mine], **style)
    left.axhline(100 * SLO_TARGET, color="grey", linestyle="--", linewidth=1)
    _label_line(left, 100 * SLO_TARGET, f"{100 * SLO_TARGET:g}% target")
    left.set(xlabel="request rate (req/s)", ylabel="SLO attainment (%)", title="attainment")
    if runs:
        for label, slo in ttft_slos(runs[0].spec):
            right.axhline(slo, color="grey", linestyle="--", linewidth=1)
            _label_line(right, slo, f"TTFT SLO {slo:g} s ({label})")
    right.set(xlabel="request rate (req/s)", ylabel="p99 TTFT (s)", title="p99 TTFT")
    _plain_log_axis(right)
    handles, labels = left.get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=8, frameon=False)
    if title:
        fig.suptitle(title)
    _save(fig, path, rect=(0, 0.1, 1, 1))


def plot_capacity(
    capacities: Mapping[str, Sequence[float]], path: StrPath, title: str = ""
) -> None:
    """Capacity (goodput at 99% attainment) per policy: a bar at the mean over seeds, and with
    several seeds a min–max bar and each seed's value as a dot."""
    fig, ax = plt.subplots(figsize=(max(5.0, 0.9 * len(capacities) + 2), 4.4))
    names = list(capacities)
    values = [np.asarray(capacities[name], dtype=np.float64) for name in names]
    means = [float(v.mean()) for v in values]
    ax.bar(names, means, color="tab:blue", alpha=0.8)
    for i, v in enumerate(values):
        label = f"{means[i]:.2f}"
        if v.size > 1:
            low, high = float(v.min()), float(v.max())
            ax.errorbar(i, means[i], yerr=[[means[i] - low], [high - means[i]]], color="black")
            ax.plot([i] * v.size, v, "o", color="black", markersize=3)
            label += f"\n{low:.2f}–{high:.2f}"
        ax.text(i, float(v.max()), label, ha="center", va="bottom", fontsize=8)
    seeds = max((v.size for v in values), default=1)
    spread = f"mean of {seeds} seeds, min–max bars" if seeds > 1 else "one seed"
    ax.set(
        ylabel="capacity (req/s at ≥99% SLO attainment)",
        title=f"{title or 'capacity'}\n({spread})",
    )
    ax.tick_params(axis="x", labelrotation=30)
    ax.margins(y=0.15)
    _save(fig, path)


def plot_requests(workload: Workload, outcome: RequestOutcome, path: StrPath, title: str) -> None:
    """Each request against its arrival time: TTFT over its TTFT SLO (log axis, 1 = the SLO),
    and the lateness of its worst token against the eq. 1 deadlines (above 0: missed).
    Red marks the requests that missed their SLO."""
    columns = workload.columns()
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.6))
    missed = ~outcome.attained
    for mask, color, label in ((~missed, "tab:blue", "met"), (missed, "tab:red", "missed")):
        style = {"color": color, "markersize": 4, "label": f"{label} ({int(mask.sum())})"}
        left.plot(columns.arrival[mask], (outcome.ttft / columns.ttft)[mask], ".", **style)
        right.plot(columns.arrival[mask], outcome.max_lateness[mask], ".", **style)
    left.axhline(1.0, color="grey", linestyle="--", linewidth=1)
    left.set(xlabel="arrival (s)", ylabel="TTFT / TTFT SLO", title="first token (1 = the SLO)")
    _plain_log_axis(left)
    right.axhline(0.0, color="grey", linestyle="--", linewidth=1)
    right.set(
        xlabel="arrival (s)",
        ylabel="worst token's lateness (s)",
        title="every token by its deadline (eq. 1): ≤ 0 met",
    )
    right.legend(fontsize=8, title="SLO", title_fontsize=8)
    fig.suptitle(title)
    _save(fig, path)
