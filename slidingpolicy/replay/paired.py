"""Paired wins: two arms' runs at the same rate, seed and repeat faced the same requests at the
same times, so comparing them run by run removes the workload's own spread, which on a shared
CPU is larger than most differences between arms. Each arm is counted against an anchor:
wins, ties and losses of its attainment over the anchor's in the runs both have.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs


@attrs.frozen(slots=True)
class Paired:
    """`arm` against `anchor` over their common runs: wins, ties, losses."""

    arm: str
    anchor: str
    wins: int
    ties: int
    losses: int

    @property
    def text(self) -> str:
        """W–T–L, as the docs write it."""
        return f"{self.wins}–{self.ties}–{self.losses}"


def paired_wins(rows: Iterable[Mapping[str, Any]], anchor: str) -> list[Paired]:
    """Each other arm of `rows` (runs.csv's rows: policy, rate, seed, repeat, attainment)
    against `anchor`, in the order the arms first appear."""
    runs: dict[str, dict[tuple[Any, ...], float]] = {}
    for row in rows:
        key = (str(row["rate"]), str(row["seed"]), str(row["repeat"]))
        runs.setdefault(str(row["policy"]), {})[key] = float(row["attainment"])
    base = runs.get(anchor, {})
    counts = []
    for arm, mine in runs.items():
        if arm == anchor:
            continue
        common = [k for k in mine if k in base]
        wins = sum(mine[k] > base[k] for k in common)
        ties = sum(mine[k] == base[k] for k in common)
        counts.append(Paired(arm, anchor, wins, ties, len(common) - wins - ties))
    return counts
