"""The matrix: every cell under every arm once, the arms' order rotating between cells."""

from __future__ import annotations

from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from slidingpolicy.replay.matrix import Cell, cells, interleaved


@given(
    st.lists(st.floats(0.1, 10), min_size=1, max_size=3, unique=True),
    st.lists(st.integers(0, 9), min_size=1, max_size=3, unique=True),
    st.integers(1, 4),
    st.integers(1, 5),
)
def test_each_cell_runs_every_arm_once_and_each_arm_leads_as_often_as_any(
    rates: list[float], seeds: list[int], repeats: int, arms: int
) -> None:
    matrix = cells(rates, seeds, repeats)
    assert len(set(matrix)) == len(rates) * len(seeds) * repeats
    schedule = interleaved(matrix, list(range(arms)))
    assert Counter(schedule) == Counter((c, a) for c in matrix for a in range(arms))
    for i, cell in enumerate(matrix):
        block = schedule[i * arms : (i + 1) * arms]
        assert {c for c, _ in block} == {cell}
    leads = Counter(schedule[i * arms][1] for i in range(len(matrix)))
    counts = [leads.get(a, 0) for a in range(arms)]
    assert max(counts) - min(counts) <= 1


def test_cells_go_by_rate_then_seed_then_repeat() -> None:
    assert cells([1.0, 2.0], [0], 2) == (
        Cell(1.0, 0, 0),
        Cell(1.0, 0, 1),
        Cell(2.0, 0, 0),
        Cell(2.0, 0, 1),
    )
