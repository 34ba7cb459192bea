"""`reproduce`: run every experiment of a config, write the raw results, the figures and
the report into one folder."""

from __future__ import annotations

import resource
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from slidingpolicy._io import write_text
from slidingpolicy._parse import read_json
from slidingpolicy._paths import StrPath
from slidingpolicy.errors import SlidingPolicyError
from slidingpolicy.reproduce.experiments import (
    Bar,
    burst_rows,
    capacity_rows,
    decision_cost,
    limit_rows,
    load_rows,
    predictor_rows,
    robustness_rows,
)
from slidingpolicy.reproduce.figures import draw
from slidingpolicy.reproduce.presets import ReproConfig
from slidingpolicy.reproduce.report import render
from slidingpolicy.runs.results import write_json, write_results
from slidingpolicy.runs.workers import cluster

T = TypeVar("T")

REPORT = "index.md"
RESULTS = "results.json"
TIMINGS = "timings.json"


def reproduce(
    config: ReproConfig,
    out: StrPath,
    bar: Bar,
    workers: int | None = None,
    ray: str | None = None,
    command: Sequence[str] | None = None,
) -> Path:
    """Every experiment of `config` (trials on local processes, or on the Ray cluster at
    `ray`: the same results), then `write_report`; the report's path. The CPU cost is timed
    here, in this process, whatever `ray` says; `command` is recorded in the provenance."""
    out = Path(out)
    started, cpu_before = time.perf_counter(), _cpu_seconds()
    stages: dict[str, float] = {}

    def stage(name: str, rows: Callable[[], T]) -> T:
        begun = time.perf_counter()
        found = rows()
        stages[name] = time.perf_counter() - begun
        return found

    with cluster(ray) as address:
        capacity = stage("capacity", lambda: capacity_rows(config, bar, workers, address))
        results: dict[str, Any] = {
            "config": config.to_dict(),
            "capacity": capacity,
            "limits": stage("limits", lambda: limit_rows(config, bar)),
            "load": stage("load", lambda: load_rows(config, capacity, bar, workers, address)),
            "burst": stage("burst", lambda: burst_rows(config, capacity, bar, workers, address)),
            "predictor": stage("predictor", lambda: predictor_rows(config, bar, workers, address)),
            "robustness": stage(
                "robustness",
                lambda: robustness_rows(config, capacity, bar, workers, address),
            ),
        }
    cost = stage("cost", lambda: decision_cost(config, capacity, bar))
    timings = {
        "cost": cost,
        "stages": stages,
        "wall_seconds": time.perf_counter() - started,
        "cpu_seconds": _cpu_seconds() - cpu_before,
    }
    write_results(out / RESULTS, results, command)
    write_json(out / TIMINGS, timings)
    return write_report(out)


def _cpu_seconds() -> float:
    """CPU time of this process and of its finished children (the local trial workers)."""
    own, children = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def write_report(folder: StrPath) -> Path:
    """The report and its figures from the raw results already in `folder`."""
    folder = Path(folder)
    written = "expected the JSON that `slidingpolicy reproduce` writes"
    results = read_json(folder / RESULTS, SlidingPolicyError, written)
    timings = read_json(folder / TIMINGS, SlidingPolicyError, written)
    draw(results, folder)
    path = folder / REPORT
    write_text(path, render(results, timings))
    return path
