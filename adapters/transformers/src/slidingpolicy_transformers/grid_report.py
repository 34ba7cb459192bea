"""A grid run's measured steps against the offline engine's hardware models.

Reads a run's ``grid.json`` and step trace (`grid_run`): each cell's steps after its first
`warmup`, their measured seconds beside what each hardware model predicts for the same batch
(noise-free `latency_of`: each allocation's chunk and cached context, TP 1). Writes
``grid.csv``, a row per cell (medians over its steps), and ``report.json``: per model, the
median relative error (model / measured - 1) over the cells, its median absolute value and
largest, by kind of step (decode only, prefill only, mixed); and the tile probes: for each
pair of grid chunk sizes at most `PROBE` tokens apart (128 and 136, ...), per decode batch
and context, the step's measured time ratio beside each model's, where the tile-quantized
model puts a step.
"""

from __future__ import annotations

import csv
import itertools
import json
import statistics
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from slidingpolicy.hardware.build import build_hardware, hardware_names
from slidingpolicy.hardware.protocol import HardwareModel
from slidingpolicy.step_trace import TraceStep, parse_step

from slidingpolicy_transformers.grid import Grid
from slidingpolicy_transformers.grid_run import DESCRIPTION

PROBE = 16
"""Chunk sizes at most this many tokens apart make a tile probe."""

FAMILIES = ("h100", "h200")
"""The GPUs whose built-in models the report compares by default."""

Key = tuple[int, int, int]
"""(chunk, decodes, context) of a cell."""


def default_hardware() -> tuple[str, ...]:
    """Every built-in model of an H100 or H200 (smooth and tile-quantized rooflines)."""
    return tuple(n for n in hardware_names() if n.split("-")[0] in FAMILIES)


def cell_key(step: TraceStep, prefix: str) -> Key | None:
    """The (chunk, decodes, context) of a cell's step: decodes all of one prompt length and
    at most one prefill, of a request whose id starts with `prefix`; None for any other step
    (a setup step prefills decoders)."""
    if step.latency is None or not step.scheduled:
        return None
    chunk, decodes, contexts = 0, 0, set()
    for allocation in step.scheduled:
        request = step.state.request(allocation.request_id)
        if request is None:
            return None
        if request.is_decoding:
            decodes += 1
            contexts.add(request.prompt_tokens)
        elif chunk or not request.id.startswith(prefix):
            return None
        else:
            chunk = allocation.tokens
    if len(contexts) > 1:
        return None
    return chunk, decodes, contexts.pop() if contexts else 0


def read_cells(folder: Path) -> tuple[dict[str, Any], dict[Key, list[TraceStep]]]:
    """The run's description and each grid cell's steps after its warm-up, in trace order."""
    description = json.loads((folder / DESCRIPTION).read_text())
    grid = Grid(**description["grid"])
    wanted = {(c.chunk, c.decodes, c.context) for c in grid.cells()}
    seen: dict[Key, int] = defaultdict(int)
    steps: dict[Key, list[TraceStep]] = defaultdict(list)
    with (folder / description["trace"]).open() as trace:
        for line in trace:
            if not line.strip():
                continue
            step = parse_step(line)
            key = cell_key(step, description["chunk_prefix"])
            if key is None or key not in wanted:
                continue
            seen[key] += 1
            if seen[key] > grid.warmup:
                steps[key].append(step)
    return description, dict(steps)


def _modelled(model: HardwareModel, steps: Sequence[TraceStep]) -> float:
    """The model's median noise-free seconds over the steps' batches."""
    times = []
    for step in steps:
        batch = step.batch()
        assert batch is not None
        times.append(model.latency_of(*batch))
    return statistics.median(times)


def cell_rows(
    cells: dict[Key, list[TraceStep]], models: dict[str, HardwareModel]
) -> list[dict[str, Any]]:
    """A row per measured cell, in grid order: sizes, measured ms (median, min, max) and
    each model's ms and relative error."""
    rows = []
    for (chunk, decodes, context), steps in sorted(cells.items(), key=lambda kv: _order(kv[0])):
        measured = [s.latency for s in steps if s.latency is not None]
        median = statistics.median(measured)
        row: dict[str, Any] = {
            "chunk": chunk,
            "decodes": decodes,
            "context": context,
            "tokens": chunk + decodes,
            "steps": len(measured),
            "measured_ms": 1000 * median,
            "measured_min_ms": 1000 * min(measured),
            "measured_max_ms": 1000 * max(measured),
        }
        for name, model in models.items():
            modelled = _modelled(model, steps)
            row[f"{name}_ms"] = 1000 * modelled
            row[f"{name}_error"] = modelled / median - 1
        rows.append(row)
    return rows


def _order(key: Key) -> tuple[int, int, int]:
    chunk, decodes, context = key
    return context, decodes, chunk


def _kind(row: dict[str, Any]) -> str:
    if not row["chunk"]:
        return "decode only"
    return "mixed" if row["decodes"] else "prefill only"


def error_summary(rows: Sequence[dict[str, Any]], names: Sequence[str]) -> list[dict[str, Any]]:
    """Per model and kind of step (and all): cells, median error, median and largest |error|."""
    summary = []
    for name in names:
        groups: dict[str, list[float]] = defaultdict(list)
        for row in rows:
            groups["all"].append(row[f"{name}_error"])
            groups[_kind(row)].append(row[f"{name}_error"])
        for kind, errors in groups.items():
            summary.append(
                {
                    "hardware": name,
                    "steps": kind,
                    "cells": len(errors),
                    "median_error": statistics.median(errors),
                    "median_abs_error": statistics.median(abs(e) for e in errors),
                    "max_abs_error": max(abs(e) for e in errors),
                }
            )
    return summary


def tile_probes(rows: Sequence[dict[str, Any]], names: Sequence[str]) -> list[dict[str, Any]]:
    """For chunk sizes a < b at most `PROBE` apart, per (decodes, context) measured at both:
    t(b) / t(a) measured and by each model."""
    by_key = {(r["chunk"], r["decodes"], r["context"]): r for r in rows}
    chunks = sorted({r["chunk"] for r in rows if r["chunk"]})
    probes = []
    for a, b in itertools.pairwise(chunks):
        if b - a > PROBE:
            continue
        for decodes, context in sorted({(r["decodes"], r["context"]) for r in rows}):
            low, high = by_key.get((a, decodes, context)), by_key.get((b, decodes, context))
            if low is None or high is None:
                continue
            probe = {"chunks": f"{b}/{a}", "decodes": decodes, "context": context}
            probe["measured"] = high["measured_ms"] / low["measured_ms"]
            for name in names:
                probe[name] = high[f"{name}_ms"] / low[f"{name}_ms"]
            probes.append(probe)
    return probes


def report(folder: Path, hardware: Sequence[str], model: str = "qwen2.5-7b") -> dict[str, Any]:
    """Compare the run in `folder`; write ``grid.csv`` and ``report.json`` there."""
    description, cells = read_cells(folder)
    models = {name: build_hardware(name, model, tp=1) for name in hardware}
    rows = cell_rows(cells, models)
    result = {
        "model": model,
        "hardware": list(hardware),
        "cells": description["cells"],
        "cells_measured": len(rows),
        "ended": description.get("ended"),
        "device_name": description.get("device_name"),
        "errors": error_summary(rows, hardware) if rows else [],
        "tile_probes": tile_probes(rows, hardware),
        "rows": rows,
    }
    (folder / "report.json").write_text(json.dumps(result, indent=2) + "\n")
    if rows:
        with (folder / "grid.csv").open("w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    return result


def show(result: dict[str, Any]) -> str:
    """The report as text: a line per cell, the error summary, the tile probes."""
    names = result["hardware"]
    lines = [
        f"{result['cells_measured']} of {result['cells']} cells measured ({result['ended']})",
        "chunk decodes context  measured ms  " + "  ".join(f"{n} ms (err)" for n in names),
    ]
    for row in result["rows"]:
        models = "  ".join(f"{row[f'{n}_ms']:.2f} ({100 * row[f'{n}_error']:+.0f}%)" for n in names)
        lines.append(
            f"{row['chunk']:5d} {row['decodes']:7d} {row['context']:7d}  "
            f"{row['measured_ms']:11.2f}  {models}"
        )
    for entry in result["errors"]:
        lines.append(
            f"{entry['hardware']}, {entry['steps']} ({entry['cells']} cells): median error "
            f"{100 * entry['median_error']:+.1f}%, median |error| "
            f"{100 * entry['median_abs_error']:.1f}%, largest {100 * entry['max_abs_error']:.1f}%"
        )
    for probe in result["tile_probes"]:
        models = ", ".join(f"{n} {probe[n]:.2f}" for n in names)
        lines.append(
            f"tile probe {probe['chunks']} at {probe['decodes']} decodes, context "
            f"{probe['context']}: measured {probe['measured']:.2f}, {models}"
        )
    return "\n".join(lines)
