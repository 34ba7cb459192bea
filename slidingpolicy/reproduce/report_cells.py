"""The report's cells and the lookups they are read from: Markdown tables, numbers, shares,
capacities by (setting, data set, policy) and each case's bound."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from slidingpolicy.pricing.accuracy import SIZE_CLASSES as CLASSES
from slidingpolicy.reproduce.presets import DATASETS

Row = dict[str, Any]

WINDOW_MATTERS = 0.05
"""Below this spread of capacity across windows 1–4 the report calls the window's gain little
(the search's own precision is 2.5%)."""


SIZE_CLASSES = tuple(c[0] for c in CLASSES)
"""The prefill-size classes of Table 5's groups (`pricing.fit.SIZE_CLASSES`)."""


FIGURES = {
    "capacity": "capacity.png",
    "load": "load.png",
    "latency": "latency.png",
    "burst": "burst.png",
    "ablation": "ablation.png",
    "limit": "limit.png",
}
"""The report's figures, written beside it."""


def md_table(header: Sequence[str], rows: Sequence[Sequence[str]], right_from: int = 1) -> str:
    align = ["---" if i < right_from else "---:" for i in range(len(header))]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def num(value: float | None, digits: int = 3) -> str:
    if value is None or not math.isfinite(value):
        return "—"
    return f"{value:.{digits}f}"


def pct(value: float, signed: bool = True) -> str:
    if not math.isfinite(value):
        return "—"
    return f"{100 * value:+.1f}%" if signed else f"{100 * value:.1f}%"


def code(label: str) -> str:
    return f"`{label}`"


class Capacities:
    """The capacity rows, looked up by (setting, data set, policy)."""

    def __init__(self, rows: Sequence[Row]) -> None:
        self.by: dict[tuple[str, str, str], dict[int, float]] = {}
        for r in rows:
            self.by.setdefault((r["setting"], r["dataset"], r["policy"]), {})[r["seed"]] = r[
                "capacity"
            ]

    def has(self, key: str, dataset: str, policy: str) -> bool:
        """Whether the policy was sized on the case."""
        return (key, dataset, policy) in self.by

    def values(self, key: str, dataset: str, policy: str) -> list[float]:
        """The capacity of each seed, in seed order."""
        seeds = self.by[(key, dataset, policy)]
        return [seeds[s] for s in sorted(seeds)]

    def mean(self, key: str, dataset: str, policy: str) -> float:
        """The mean over seeds."""
        values = self.values(key, dataset, policy)
        return sum(values) / len(values)

    def cell(self, key: str, dataset: str, policy: str) -> str:
        """ "mean (min–max)"."""
        v = self.values(key, dataset, policy)
        return f"{num(sum(v) / len(v))} ({num(min(v), 2)}–{num(max(v), 2)})"

    def ratio(self, key: str, dataset: str, policy: str, baseline: str) -> tuple[float, int, int]:
        """The mean of the per-seed ratios (paired seeds), and the seeds won and lost."""
        mine = self.by[(key, dataset, policy)]
        theirs = self.by[(key, dataset, baseline)]
        ratios = [mine[s] / theirs[s] for s in sorted(mine) if theirs.get(s, 0.0) > 0.0]
        if not ratios:
            return math.nan, 0, 0
        won = sum(r > 1.0 for r in ratios)
        lost = sum(r < 1.0 for r in ratios)
        return sum(ratios) / len(ratios), won, lost


class Limits:
    """The bound of each case (`results["limits"]`; empty for results made before it), by
    (setting, data set)."""

    def __init__(self, rows: Sequence[Row]) -> None:
        self.by = {(r["setting"], r["dataset"]): r for r in rows}

    def __bool__(self) -> bool:
        return bool(self.by)

    def bound(self, key: str, dataset: str) -> float:
        """The case's bound (req/s); NaN when it was not computed."""
        row = self.by.get((key, dataset))
        return math.nan if row is None else float(row["bound"])

    def share(self, caps: Capacities, key: str, dataset: str, policy: str) -> float:
        """A policy's mean capacity as a share of the case's bound."""
        return caps.mean(key, dataset, policy) / self.bound(key, dataset)


def settings_of(results: Row) -> list[str]:
    return [s["key"] for s in results["config"]["settings"]]


def paper_settings(results: Row) -> list[str]:
    return [s["key"] for s in results["config"]["settings"] if s["role"] == "paper"]


def gains(results: Row, caps: Capacities, mine: str, theirs: str) -> dict[str, float]:
    """`mine` over `theirs` per data set, mean ratio − 1 over the paper's settings."""
    keys = paper_settings(results)
    return {
        d: sum(caps.ratio(k, d, mine, theirs)[0] for k in keys) / len(keys) - 1.0 for d in DATASETS
    }
