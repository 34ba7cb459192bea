"""Run a `Grid` on the engine: every step traced, the run described in ``grid.json``.

The engine gets the grid's requests, a KV cache that holds them (`Grid.kv_blocks`) and the
`GridPolicy`; its step trace (``grid-trace.jsonl``, `slidingpolicy.step_trace`) records each
step's batch beside its measured seconds, for `slidingpolicy fit --trace` and the grid's
report. The run ends when the last cell is done, when `budget` seconds have passed since the
engine started being built (what ran is kept), when no step has run for `stall` seconds, or
when the engine stops on its own.
"""

from __future__ import annotations

import json
import platform
import time
from pathlib import Path
from typing import Any

import attrs
import torch
import transformers

from slidingpolicy_transformers.engine import DTYPES, Engine, EngineSettings
from slidingpolicy_transformers.grid import CHUNK, Grid, GridError, GridPolicy

TRACE = "grid-trace.jsonl"
DESCRIPTION = "grid.json"
POLL = 0.05
DTYPE_BYTES = {name: torch.tensor([], dtype=dtype).element_size() for name, dtype in DTYPES.items()}


@attrs.frozen(slots=True)
class RunSettings:
    """Where and how long: the model folder, device, dtype, KV block size, the seconds the
    whole run may take and those without a step before it is called stalled."""

    model: Path
    device: str = "cpu"
    dtype: str = "float32"
    block_size: int = 256
    budget: float = 600.0
    stall: float = 60.0


def kv_bytes(config: Any, dtype: str, tokens: int) -> int:
    """Bytes of `tokens` tokens of KV cache for a model of `config` in `dtype`."""
    heads = int(config.num_attention_heads)
    head_dim = int(getattr(config, "head_dim", None) or config.hidden_size // heads)
    per_token = 2 * int(config.num_hidden_layers) * int(config.num_key_value_heads) * head_dim
    return tokens * per_token * DTYPE_BYTES[dtype]


def check_memory(engine: Engine, blocks: int, block_size: int) -> None:
    """Refuse (`GridError`) a KV cache that would not fit in 90% of the GPU's free memory."""
    device = torch.device(engine.settings.device)
    if device.type != "cuda":
        return
    need = kv_bytes(engine.model.config, engine.settings.dtype, blocks * block_size)
    free, _ = torch.cuda.mem_get_info(device)
    if need > 0.9 * free:
        raise GridError(
            f"the grid's KV cache needs {need / 2**30:.1f} GiB ({blocks} blocks of {block_size} "
            f"tokens) and the GPU has {free / 2**30:.1f} GiB free after the model: use fewer "
            "or smaller batches or contexts"
        )


def run_grid(grid: Grid, settings: RunSettings, out: Path) -> dict[str, Any]:
    """Run `grid` and write ``grid.json`` (returned) and the trace under `out`."""
    out.mkdir(parents=True, exist_ok=True)
    trace = out / TRACE
    trace.unlink(missing_ok=True)
    began = time.monotonic()
    policy = GridPolicy(grid)
    blocks = grid.kv_blocks(settings.block_size)
    engine = Engine(
        EngineSettings(
            settings.model,
            "grid",
            {"trace": str(trace), "check_plans": False},
            num_blocks=blocks,
            block_size=settings.block_size,
            device=settings.device,
            dtype=settings.dtype,
        ),
        policy,
    )
    built = time.monotonic() - began
    attention = engine.model.config._attn_implementation  # as the engine runs it, until stop()
    check_memory(engine, blocks, settings.block_size)
    for i, request in enumerate(grid.requests()):
        prompt = [3 + (7 * i + k) % (engine.vocab_size - 3) for k in range(request.prompt)]
        engine.add(request.id, prompt, request.output, {})
    engine.start()
    try:
        ended = _wait(engine, policy, settings, began)
    finally:
        engine.stop()
    description = _describe(grid, settings, engine, policy, blocks)
    description.update(
        attention=attention,
        ended=ended,
        build_seconds=round(built, 3),
        seconds=round(time.monotonic() - began, 3),
    )
    (out / DESCRIPTION).write_text(json.dumps(description, indent=2) + "\n")
    return description


def _wait(engine: Engine, policy: GridPolicy, settings: RunSettings, began: float) -> str:
    """Wait for the grid to end; why it ended: done, budget, stalled or engine stopped."""
    binding = engine.binding
    assert binding is not None
    steps, moved = -1, time.monotonic()
    while True:
        scheduler = binding.scheduler
        if scheduler is not None and policy.finished(scheduler.sliding.pstate):
            return "done"
        now = time.monotonic()
        if now - began > settings.budget:
            return "budget"
        if not engine.running():
            return "engine stopped"
        taken = -1 if scheduler is None else scheduler.sliding.steps
        if taken != steps:
            steps, moved = taken, now
        elif now - moved > settings.stall:
            return "stalled"
        time.sleep(POLL)


def _describe(
    grid: Grid, settings: RunSettings, engine: Engine, policy: GridPolicy, blocks: int
) -> dict[str, Any]:
    """What ran, where: the grid, the cells done, the engine's settings and versions."""
    scheduler = engine.binding.scheduler if engine.binding is not None else None
    pstate = scheduler.sliding.pstate if scheduler is not None else policy.init()
    device = torch.device(settings.device)
    return {
        "grid": {
            "chunks": list(grid.chunks),
            "batches": list(grid.batches),
            "contexts": list(grid.contexts),
            "steps": grid.steps,
            "warmup": grid.warmup,
        },
        "chunk_prefix": CHUNK,
        "cells": len(policy.cells),
        "cells_done": min(pstate.cell, len(policy.cells)),
        "steps_run": 0 if scheduler is None else scheduler.sliding.steps,
        "faults": {} if scheduler is None else dict(scheduler.sliding.faults),
        "trace": TRACE,
        "model": str(settings.model),
        "device": settings.device,
        "device_name": (
            torch.cuda.get_device_name(device)
            if device.type == "cuda"
            else (platform.processor() or platform.machine())
        ),
        "dtype": settings.dtype,
        "kv_blocks": blocks,
        "block_size": settings.block_size,
        "token_budget": grid.token_budget,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "budget_seconds": settings.budget,
    }
