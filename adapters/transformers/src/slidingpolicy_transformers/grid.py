"""A grid of engine steps to measure: each step runs exactly B decodes of about L cached
tokens each and one prefill chunk of c tokens, a few steps per (c, B, L) cell.

`GridPolicy` plans them against the crafted requests of `Grid.requests`: per context L,
max(B) decoders ``dec-L-i`` with prompts of L tokens that decode for as long as the grid needs
them; per cell with c > 0, one request ``chunk-c-B-L`` of `steps` · c prompt tokens and one
output token, prefilled c tokens a step, which ends with its last chunk. The policy first
prefills every decoder (setup steps), then runs the cells in `Grid.cells` order, each for
`steps` observed steps, then plans nothing. Cells with B = 0 do not depend on L and run once,
first, with L = 0.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
from slidingpolicy import Allocation, BatchPlan, PlanBranch, Request, SchedulerState

DECODER = "dec-"
CHUNK = "chunk-"
"""The id prefixes of the grid's requests: a step whose only prefill is a ``chunk-`` request
is a cell's step; one that prefills a ``dec-`` request is a setup step."""

NAME = "grid"
IDLE = BatchPlan((), PlanBranch.IDLE, NAME, 0, 0.0)


class GridError(ValueError):
    """A grid that cannot be run; the message names the setting."""


def _sizes(name: str, values: Sequence[int], low: int) -> tuple[int, ...]:
    if not values or any(type(v) is not int or v < low for v in values):
        raise GridError(f"{name}: expected whole numbers >= {low}, got {list(values)}")
    if len(set(values)) < len(values):
        raise GridError(f"{name}: {list(values)} names a size twice")
    return tuple(sorted(values))


def _chunks(values: Sequence[int]) -> tuple[int, ...]:
    return _sizes("chunks", values, 0)


def _batches(values: Sequence[int]) -> tuple[int, ...]:
    return _sizes("batches", values, 0)


def _contexts(values: Sequence[int]) -> tuple[int, ...]:
    return _sizes("contexts", values, 1)


@attrs.frozen(slots=True)
class Cell:
    """`decodes` decodes of about `context` cached tokens (0 when there are none) beside a
    prefill chunk of `chunk` tokens (0: none)."""

    chunk: int
    decodes: int
    context: int

    @property
    def chunk_id(self) -> str:
        """The id of the request whose chunks this cell prefills."""
        return f"{CHUNK}{self.chunk}-{self.decodes}-{self.context}"


@attrs.frozen(slots=True)
class GridRequest:
    """A request to add before the grid runs: `prompt` tokens, `output` tokens out."""

    id: str
    prompt: int
    output: int


@attrs.frozen(slots=True)
class Grid:
    """Chunk sizes × decode batch sizes × contexts, `steps` steps a cell (the first `warmup`
    of them discarded by the report)."""

    chunks: tuple[int, ...] = attrs.field(converter=_chunks)
    batches: tuple[int, ...] = attrs.field(converter=_batches)
    contexts: tuple[int, ...] = attrs.field(converter=_contexts)
    steps: int = 6
    warmup: int = 2

    def __attrs_post_init__(self) -> None:
        if type(self.warmup) is not int or self.warmup < 0:
            raise GridError(f"warmup: expected a whole number >= 0, got {self.warmup!r}")
        if type(self.steps) is not int or self.steps <= self.warmup:
            raise GridError(f"steps: expected more than warmup ({self.warmup}), got {self.steps!r}")
        if not self.cells():
            raise GridError("chunks and batches: every cell would be empty (c = 0 and B = 0)")

    def cells(self) -> tuple[Cell, ...]:
        """Every cell in the order it runs: B = 0 first, then by L, B and c."""
        alone = [Cell(c, 0, 0) for c in self.chunks if c > 0 and 0 in self.batches]
        mixed = [
            Cell(c, b, context)
            for context in self.contexts
            for b in self.batches
            if b > 0
            for c in self.chunks
        ]
        return (*alone, *mixed)

    @property
    def token_budget(self) -> int:
        """The most tokens one step holds: the largest chunk beside the most decodes."""
        return max(self.chunks) + max(self.batches)

    def decode_steps(self, context: int, index: int) -> int:
        """Steps decoder `index` of `context` decodes in: those of its context's cells with
        more than `index` decodes."""
        cells = [c for c in self.cells() if c.context == context and c.decodes > index]
        return self.steps * len(cells)

    def requests(self) -> tuple[GridRequest, ...]:
        """The decoders, each asking one token more than it decodes in (the first comes with
        its prefill), then each cell's chunk request."""
        decoders = [
            GridRequest(f"{DECODER}{context}-{i}", context, self.decode_steps(context, i) + 1)
            for context in self.contexts
            for i in range(max(self.batches))
        ]
        chunks = [GridRequest(c.chunk_id, self.steps * c.chunk, 1) for c in self.cells() if c.chunk]
        return (*decoders, *chunks)

    def kv_blocks(self, block_size: int) -> int:
        """KV blocks that hold every decoder to its last token and one chunk request at a
        time (they run one after another), with one block to spare."""
        total = 1
        longest = 0
        for request in self.requests():
            blocks = -(-(request.prompt + request.output) // block_size)
            if request.id.startswith(CHUNK):
                longest = max(longest, blocks)
            else:
                total += blocks
        return total + longest


@attrs.frozen(slots=True)
class GridState:
    """The cell running, its steps observed, and whether the last plan was one of them."""

    cell: int = 0
    taken: int = 0
    planned: bool = False


@attrs.frozen(slots=True)
class GridPolicy:
    """Plans the steps of `grid` (module docstring); the `Policy` protocol."""

    grid: Grid
    cells: tuple[Cell, ...] = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "cells", self.grid.cells())

    @property
    def name(self) -> str:
        """The policy's name."""
        return NAME

    @property
    def token_budget(self) -> int:
        """The grid's largest step."""
        return self.grid.token_budget

    def init(self) -> GridState:
        """Before the first cell."""
        return GridState()

    def finished(self, pstate: GridState) -> bool:
        """True once every cell has run its steps."""
        return pstate.cell >= len(self.cells)

    def plan(self, pstate: GridState, state: SchedulerState) -> tuple[BatchPlan, GridState]:
        """A setup step while a decoder is still prefilling, else the running cell's step
        (nothing while one of its requests has not arrived, and once the grid is done)."""
        unplanned = attrs.evolve(pstate, planned=False)
        setup = [r for r in state.prefill_candidates if r.id.startswith(DECODER)]
        if setup:
            return self._setup(setup), unplanned
        if self.finished(pstate):
            return IDLE, unplanned
        cell = self.cells[pstate.cell]
        allocations = []
        for i in range(cell.decodes):
            decoder = state.request(f"{DECODER}{cell.context}-{i}")
            if decoder is None or not decoder.is_decoding:
                return IDLE, unplanned
            allocations.append(decoder.one_token)
        if cell.chunk:
            chunk = state.request(cell.chunk_id)
            if chunk is None or chunk.remaining_prefill < cell.chunk:
                return IDLE, unplanned
            allocations.append(Allocation(chunk.id, cell.chunk))
        plan = BatchPlan(tuple(allocations), PlanBranch.WHOLE, NAME, cell.chunk, 0.0)
        return plan, attrs.evolve(pstate, planned=True)

    def _setup(self, waiting: Sequence[Request]) -> BatchPlan:
        """The decoders' remaining prompts, whole, in state order, up to the token budget."""
        allocations: list[Allocation] = []
        room = self.token_budget
        for request in waiting:
            tokens = min(request.remaining_prefill, room)
            allocations.append(Allocation(request.id, tokens))
            room -= tokens
            if not room:
                break
        total = self.token_budget - room
        return BatchPlan(tuple(allocations), PlanBranch.WHOLE, NAME, total, 0.0)

    def observe(
        self, pstate: GridState, state: SchedulerState, plan: BatchPlan, latency: float
    ) -> GridState:
        """One more step of the running cell, if the plan was one; the next cell after
        `steps`."""
        if not pstate.planned:
            return pstate
        if pstate.taken + 1 < self.grid.steps:
            return GridState(pstate.cell, pstate.taken + 1)
        return GridState(pstate.cell + 1, 0)
