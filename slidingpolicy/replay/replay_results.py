"""A replay's results: one record per run, table rows in `simulate`'s columns, the per-arm
summary over seeds and repeats (median and min–max), and the plot of attainment against rate.

A run's row holds the columns of `runs.results.metrics_row`, so that a replayed and a
simulated run compare column for column; the metrics a client cannot observe
(`measure.UNOBSERVED`) are None.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np

from slidingpolicy._paths import StrPath
from slidingpolicy.metrics import SLO_TARGET, Metrics, RequestOutcome
from slidingpolicy.replay.matrix import Cell
from slidingpolicy.replay.measure import NOT_NEEDED, UNOBSERVED, Measured
from slidingpolicy.runs.results import metrics_row, request_rows
from slidingpolicy.runs.specs import WorkloadSpec
from slidingpolicy.workloads import Workload

SUMMARY_METRICS = (
    "ttft_p50",
    "ttft_p99",
    "ttft_or_notice_p99",
    "tbt_p50",
    "tbt_p99",
    "token_throughput",
)
"""The metrics the summary gives as their median over a setting's runs."""


@attrs.frozen(slots=True)
class ReplayRun:
    """One run: the arm, the cell, the workload as sent, what was measured and its judgement,
    and the run's own figures (wall seconds, the client's largest send lag)."""

    arm: str
    cell: Cell
    spec: WorkloadSpec
    workload: Workload
    measured: tuple[Measured, ...]
    metrics: Metrics
    outcome: RequestOutcome
    failures: dict[str, int]
    wall: float
    send_lag: float

    @property
    def rate(self) -> float:
        """The cell's rate, or for recorded times their mean rate (requests per second)."""
        if self.cell.rate is not None:
            return self.cell.rate
        arrivals = self.workload.columns().arrival
        span = float(arrivals[-1] - arrivals[0])
        return (arrivals.size - 1) / span if span > 0 else math.nan

    def label(self) -> dict[str, Any]:
        """The columns that name the run."""
        c = self.cell
        return {"policy": self.arm, "rate": c.rate, "seed": c.seed, "repeat": c.repeat}

    def row(self) -> dict[str, Any]:
        """The run's table row: `simulate`'s metric columns, then the failed requests."""
        row = metrics_row(self.label(), self.metrics)
        row.update({k: None for k in UNOBSERVED if k in row})
        return {**row, "failed": sum(self.failures.values())}

    def request_rows(self) -> list[dict[str, Any]]:
        """One row per request: `simulate`'s columns, when it was sent and why it failed."""
        rows = request_rows(self.workload, self.outcome)
        for row, m in zip(rows, self.measured, strict=True):
            row.update(preemptions=None, sent=m.sent, failure=m.failure)
        return rows

    def to_dict(self) -> dict[str, Any]:
        """Everything about the run, as JSON values."""
        metrics = self.metrics.to_dict()
        metrics.update(dict.fromkeys(UNOBSERVED))
        return {
            **self.label(),
            "mean_rate": self.rate,
            "workload": attrs.asdict(self.spec),
            "window": None if self.workload.window is None else self.workload.window.to_dict(),
            "cut_short": sum(m.failure == NOT_NEEDED for m in self.measured),
            "metrics": metrics,
            "failures": self.failures,
            "wall_seconds": self.wall,
            "send_lag": self.send_lag,
            "requests": self.request_rows(),
        }


def median_finite(values: Sequence[float]) -> float:
    """The median of the finite values (NaN if none is)."""
    finite = [v for v in values if math.isfinite(v)]
    return float(np.median(finite)) if finite else math.nan


def summary_rows(runs: Sequence[ReplayRun]) -> list[dict[str, Any]]:
    """One row per (arm, rate), in the order first run: attainment median, min and max over
    its runs (seeds × repeats), the median of each `SUMMARY_METRICS`, the failed requests."""
    groups: dict[tuple[str, float | None], list[ReplayRun]] = {}
    for run in runs:
        groups.setdefault((run.arm, run.cell.rate), []).append(run)
    rows = []
    for (arm, rate), mine in groups.items():
        attainment = [r.metrics.attainment for r in mine]
        row: dict[str, Any] = {"policy": arm, "rate": rate, "runs": len(mine)}
        row.update(
            attainment_median=median_finite(attainment),
            attainment_min=min(attainment),
            attainment_max=max(attainment),
        )
        for name in SUMMARY_METRICS:
            row[name] = median_finite([getattr(r.metrics, name) for r in mine])
        row["failed"] = sum(sum(r.failures.values()) for r in mine)
        row["requests"] = sum(r.metrics.requests for r in mine)
        rows.append(row)
    return rows


def plot_replay(runs: Sequence[ReplayRun], path: StrPath, title: str) -> None:
    """SLO attainment (median over each setting's runs, bars from min to max) and median p99
    TTFT against the request rate, one line per arm."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    from slidingpolicy._io import replace_atomically
    from slidingpolicy.figures.plots import LINESTYLES, MARKERS

    arms = list(dict.fromkeys(r.arm for r in runs))
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 5.2))
    for i, arm in enumerate(arms):
        by_rate: dict[float, list[ReplayRun]] = {}
        for run in (r for r in runs if r.arm == arm):
            by_rate.setdefault(run.rate, []).append(run)
        rates = sorted(by_rate)
        values = [[100 * r.metrics.attainment for r in by_rate[x]] for x in rates]
        middle = np.array([np.median(v) for v in values])
        spread = [middle - [min(v) for v in values], [max(v) for v in values] - middle]
        style = {"marker": MARKERS[i % len(MARKERS)], "linestyle": LINESTYLES[i % len(LINESTYLES)]}
        left.errorbar(rates, middle, yerr=spread, capsize=3, label=arm, **style)
        p99 = [median_finite([r.metrics.ttft_p99 for r in by_rate[x]]) for x in rates]
        right.plot(rates, p99, label=arm, **style)
    left.axhline(100 * SLO_TARGET, color="grey", linestyle="--", linewidth=1)
    target = f"{100 * SLO_TARGET:g}% target"
    where = ("axes fraction", "data")
    left.annotate(target, (0.99, 100 * SLO_TARGET), xycoords=where, ha="right", va="bottom")
    left.set(
        xlabel="request rate (req/s)",
        ylabel="SLO attainment (%)",
        title="attainment: median, min–max bars",
        ylim=(0, 103),
    )
    right.set(xlabel="request rate (req/s)", ylabel="p99 TTFT (s)", title="p99 TTFT (median)")
    right.set_yscale("log")
    for axis in (right.yaxis.set_major_formatter, right.yaxis.set_minor_formatter):
        axis(FuncFormatter(lambda value, _: f"{value:g}"))
    handles, labels = left.get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=8, frameon=False)
    fig.suptitle(title)
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    with replace_atomically(path) as temporary:
        fig.savefig(temporary, dpi=110, format="png")
    plt.close(fig)
