"""The figures of a `bench/gpu_transformers.sh` run, as the docs need them: summary.json and
summary.md.

    python bench/gpu_summary.py WORK --out DIR

WORK is the run's work folder: ``run.json`` (the script's settings), ``phases.tsv`` (each
phase's name, seconds and status), the grid's ``grid/grid.json``, ``grid/report.json`` and
``grid/fit.txt``, and the replay's ``replay/results.json``. A part that did not run is said
not to have run, not guessed at.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


def _json(path: Path) -> Any:
    """The file's JSON, or None when it is missing or unreadable."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _phases(path: Path) -> list[dict[str, Any]]:
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return []
    phases = []
    for line in lines:
        name, seconds, status = line.split("\t")
        phases.append({"phase": name, "seconds": int(seconds), "status": status})
    return phases


def collect(work: Path) -> dict[str, Any]:
    """Everything the summary says, from the work folder."""
    grid = _json(work / "grid" / "grid.json")
    report = _json(work / "grid" / "report.json")
    replay = _json(work / "replay" / "results.json")
    fit = work / "grid" / "fit.txt"
    return {
        "settings": _json(work / "run.json") or {},
        "phases": _phases(work / "phases.tsv"),
        "environment": None
        if grid is None
        else {
            k: grid.get(k) for k in ("device_name", "dtype", "attention", "torch", "transformers")
        },
        "grid": None
        if report is None
        else {
            "cells": report["cells"],
            "cells_measured": report["cells_measured"],
            "ended": report["ended"],
            "errors": report["errors"],
            "tile_probes": report["tile_probes"],
        },
        "fit": fit.read_text() if fit.is_file() else None,
        "replay": None
        if replay is None
        else {
            "command": replay.get("command"),
            "summary": replay["summary"],
            "skipped": len(replay.get("skipped", [])),
        },
    }


def _percent(value: float) -> str:
    return f"{100 * value:+.1f}%"


def _grid_lines(grid: dict[str, Any] | None) -> list[str]:
    if grid is None:
        return ["The grid did not run (no grid/report.json)."]
    lines = [
        f"{grid['cells_measured']} of {grid['cells']} cells measured (the run: {grid['ended']}).",
        "",
        "| hardware model | steps | cells | median error | median abs. error | largest |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for e in grid["errors"]:
        lines.append(
            f"| `{e['hardware']}` | {e['steps']} | {e['cells']} | {_percent(e['median_error'])} "
            f"| {100 * e['median_abs_error']:.1f}% | {100 * e['max_abs_error']:.1f}% |"
        )
    if grid["tile_probes"]:
        names = [k for k in grid["tile_probes"][0] if k not in ("chunks", "decodes", "context")]
        lines += ["", "Tile probes, t(b) / t(a):", ""]
        lines += ["| chunks b/a | decodes | context | " + " | ".join(names) + " |"]
        lines += ["| --- | ---: | ---: | " + " | ".join("---:" for _ in names) + " |"]
        for p in grid["tile_probes"]:
            values = " | ".join(f"{p[n]:.2f}" for n in names)
            lines.append(f"| {p['chunks']} | {p['decodes']} | {p['context']} | {values} |")
    return lines


def _replay_lines(replay: dict[str, Any] | None) -> list[str]:
    if replay is None:
        return ["The replay did not run (no replay/results.json)."]
    lines = [
        "| arm | req/s | SLO attainment, median (min–max) | p50 / p99 TTFT (s) "
        "| p50 / p99 TBT (ms) | tokens/s | failed |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in replay["summary"]:
        lines.append(
            f"| `{r['policy']}` | {r['rate']:g} | {r['attainment_median']:.3f} "
            f"({r['attainment_min']:.3f}–{r['attainment_max']:.3f}) "
            f"| {r['ttft_p50']:.2f} / {r['ttft_p99']:.2f} "
            f"| {1000 * r['tbt_p50']:.0f} / {1000 * r['tbt_p99']:.0f} "
            f"| {r['token_throughput']:.0f} | {r['failed']}/{r['requests']} |"
        )
    if replay["skipped"]:
        lines += ["", f"{replay['skipped']} runs skipped: the time limit was reached."]
    return lines


def _heading(summary: dict[str, Any]) -> list[str]:
    settings, environment = summary["settings"], summary["environment"]
    lines = ["# transformers' continuous batching: measured steps and a replay", ""]
    if settings:
        lines.append(
            f"`{settings['shape']}` in {settings['dtype']} on {settings['device']}; the replay: "
            f"{settings['arms']} on {settings['workload']} at {settings['rates']} req/s, "
            f"{settings['requests']} requests a run. `{settings['command']}`"
        )
    if settings.get("mode") == "smoke":
        lines.append("(--smoke: a tiny model on the CPU; the figures test the path, no more.)")
    if environment:
        lines.append(
            f"{environment['device_name']}; attention {environment['attention']}; torch "
            f"{environment['torch']}, transformers {environment['transformers']}."
        )
    return [*lines, ""]


def markdown(summary: dict[str, Any]) -> str:
    """The summary as a page."""
    lines = _heading(summary)
    lines += ["| phase | seconds | status |", "| --- | ---: | --- |"]
    lines += [f"| {p['phase']} | {p['seconds']} | {p['status']} |" for p in summary["phases"]]
    lines += ["", "## Measured steps against the hardware models", ""]
    lines += _grid_lines(summary["grid"])
    if summary["fit"]:
        lines += ["", "The predictor fitted to the grid's trace:", "", "```", summary["fit"], "```"]
    lines += ["", "## Replay", ""]
    lines += _replay_lines(summary["replay"])
    return "\n".join(lines).rstrip() + "\n"


def main() -> None:
    """Write summary.json and summary.md."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("work", type=Path, help="the run's work folder")
    parser.add_argument("--out", type=Path, required=True, help="where the summary goes")
    arguments = parser.parse_args()
    if not arguments.work.is_dir():
        parser.error(f"{arguments.work}: no such folder")
    summary = collect(arguments.work)
    arguments.out.mkdir(parents=True, exist_ok=True)
    (arguments.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    (arguments.out / "summary.md").write_text(markdown(summary))


if __name__ == "__main__":
    main()
