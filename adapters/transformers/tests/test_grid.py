"""The grid and its policy, on an ideal engine that runs every plan as planned: each cell gets
exactly its steps of B decodes and one c-token chunk, no request runs out early, the KV
blocks hold them all, and a bad grid is refused naming the setting."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from slidingpolicy import Request, SchedulerState

from slidingpolicy_transformers.grid import CHUNK, Grid, GridError, GridPolicy, GridState


def _run(grid: Grid, block: int) -> tuple[Counter[tuple[int, int, int]], int, GridState]:
    """Run the grid's policy on an ideal engine: every request added at once, every plan run
    as planned, a request gone when its outputs are out. The cells' steps by (c, B, L), the
    most KV blocks of `block` tokens held at once, and the policy's last state."""
    policy = GridPolicy(grid)
    live = {r.id: [r.prompt, 0, 0, r.output] for r in grid.requests()}  # prompt, prefilled, out
    pstate, cells, held = policy.init(), Counter[tuple[int, int, int]](), 0
    for _ in range(10_000):
        records = {
            rid: Request(rid, 0.0, p, done, out, 1.0, 0.1, max_new_tokens=limit)
            for rid, (p, done, out, limit) in live.items()
        }
        state = SchedulerState(0.0, tuple(records.values()), 8000.0)
        plan, pstate = policy.plan(pstate, state)
        if not plan.allocations:
            break
        decodes = [a for a in plan.allocations if records[a.request_id].is_decoding]
        chunks = [a for a in plan.allocations if not records[a.request_id].is_decoding]
        if pstate.planned:
            contexts = {records[a.request_id].prompt_tokens for a in decodes}
            assert len(chunks) <= 1
            assert len(contexts) <= 1
            assert all(a.tokens == 1 for a in decodes)
            assert all(a.request_id.startswith(CHUNK) for a in chunks)
            cells[(chunks[0].tokens if chunks else 0, len(decodes), min(contexts, default=0))] += 1
        for allocation in plan.allocations:
            request = live[allocation.request_id]
            if request[1] < request[0]:
                request[1] += allocation.tokens
                request[2] += request[1] == request[0]
            else:
                request[2] += 1
            if request[2] == request[3]:
                del live[allocation.request_id]
        held = max(held, sum(-(-(done + out) // block) for _, done, out, _ in live.values()))
        pstate = policy.observe(pstate, state, plan, 0.01)
    return cells, held, pstate


sizes = st.lists(st.integers(0, 40), min_size=1, max_size=4, unique=True)


@settings(max_examples=60, deadline=None)
@given(
    sizes,
    sizes,
    st.lists(st.integers(1, 60), min_size=1, max_size=3, unique=True),
    st.integers(1, 4),
    st.integers(0, 2),
    st.integers(1, 16),
)
def test_every_cell_runs_its_steps_exactly_as_planned(
    chunks: list[int], batches: list[int], contexts: list[int], steps: int, warmup: int, block: int
) -> None:
    try:
        grid = Grid(chunks, batches, contexts, steps + warmup, warmup)
    except GridError:
        return  # only c = 0 and B = 0
    cells, held, pstate = _run(grid, block)
    assert GridPolicy(grid).finished(pstate)
    expected = {(c.chunk, c.decodes, c.context): grid.steps for c in grid.cells()}
    assert dict(cells) == expected
    assert held <= grid.kv_blocks(block)


def test_cells_without_decodes_run_once_and_first() -> None:
    grid = Grid([0, 128, 136], [0, 16], [512, 2048], 3, 1)
    keys = [(c.chunk, c.decodes, c.context) for c in grid.cells()]
    assert keys[:2] == [(128, 0, 0), (136, 0, 0)]
    assert len(keys) == 2 + 2 * 3
    assert grid.token_budget == 136 + 16


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        (([-1, 8], [0], [16]), "chunks"),
        (([8, 8], [0], [16]), "chunks"),
        (([8], [], [16]), "batches"),
        (([8], [2], [0]), "contexts"),
        (([8], [2], [16], 2, 2), "steps"),
        (([8], [2], [16], 3, -1), "warmup"),
        (([0], [0], [16]), "every cell"),
    ],
)
def test_a_bad_grid_is_refused_naming_its_setting(arguments: tuple[Any, ...], named: str) -> None:
    with pytest.raises(GridError, match=named):
        Grid(*arguments)
