"""`reproduce`: run every experiment of a config, write the raw results, the figures and
the report into one folder."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from slidingpolicy._io import write_text
from slidingpolicy.engine.results import write_json
from slidingpolicy.engine.workers import cluster
from slidingpolicy.reproduce.config import ReproConfig
from slidingpolicy.reproduce.experiments import (
    Bar,
    burst_rows,
    capacity_rows,
    decision_cost,
    load_rows,
    predictor_rows,
)
from slidingpolicy.reproduce.figures import draw
from slidingpolicy.reproduce.report import render

REPORT = "index.md"
RESULTS = "results.json"
TIMINGS = "timings.json"


def reproduce(
    config: ReproConfig,
    out: Path,
    bar: Bar,
    workers: int | None = None,
    ray: str | None = None,
) -> Path:
    """Every experiment of `config` (trials on local processes, or on the Ray cluster at
    `ray`: the same results), then `write_report`; the report's path. The CPU cost is timed
    here, in this process, whatever `ray` says."""
    started = time.perf_counter()
    with cluster(ray) as address:
        capacity = capacity_rows(config, bar, workers, address)
        results: dict[str, Any] = {
            "config": config.to_dict(),
            "capacity": capacity,
            "load": load_rows(config, capacity, bar, workers, address),
            "burst": burst_rows(config, capacity, bar, workers, address),
            "predictor": predictor_rows(config, bar, workers, address),
        }
    cost = decision_cost(config, capacity, bar)
    timings = {"cost": cost, "wall_seconds": time.perf_counter() - started}
    write_json(out / RESULTS, results)
    write_json(out / TIMINGS, timings)
    return write_report(out)


def write_report(folder: Path) -> Path:
    """The report and its figures from the raw results already in `folder`."""
    results = json.loads((folder / RESULTS).read_text())
    timings = json.loads((folder / TIMINGS).read_text())
    draw(results, folder)
    path = folder / REPORT
    write_text(path, render(results, timings))
    return path
