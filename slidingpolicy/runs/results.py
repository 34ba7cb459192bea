"""Results on disk: deterministic JSON, CSV tables, and the engine's timings kept apart.

`results.json` holds what a seed determines (specs, metrics, per-request outcomes), so the
same seed and command give the same bytes, and its "provenance": the version, the git commit
and the command line that made it (`runs.provenance`); wall-clock and CPU figures go to
`timings.json`.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from slidingpolicy._io import replace_atomically, write_text
from slidingpolicy._paths import StrPath
from slidingpolicy.metrics import LATENCIES, Metrics, RequestOutcome, stat_fields
from slidingpolicy.runs.capacity_search import CapacityResult
from slidingpolicy.runs.provenance import provenance
from slidingpolicy.runs.specs import RunSummary
from slidingpolicy.workloads import Workload

METRIC_COLUMNS = (
    "attainment",
    "ttft_attainment",
    "tbt_attainment",
    "goodput",
    *(field for latency in LATENCIES for field in stat_fields(latency)),
    "token_throughput",
    "request_throughput",
    "completed",
    "preemptions",
    "predictor_mae",
)
"""The metrics of a CSV row (`slidingpolicy.metrics` defines each)."""


def _clean(value: Any) -> Any:
    """NaN and infinities as None, recursively, so the JSON is standard."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


def dumps(data: Any) -> str:
    """Deterministic JSON text: sorted keys, NaN as null, a final newline."""
    return json.dumps(_clean(data), indent=2, sort_keys=True, allow_nan=False) + "\n"


def outcome_rows(ids: Sequence[str], outcome: RequestOutcome) -> list[dict[str, Any]]:
    """One row per request."""
    columns = {
        "generated": outcome.generated,
        "ttft": outcome.ttft,
        "max_gap": outcome.max_gap,
        "max_lateness": outcome.max_lateness,
        "finish": outcome.finish,
        "preemptions": outcome.preemptions,
        "completed": outcome.completed,
        "attained": outcome.attained,
    }
    lists = {k: np.asarray(v).tolist() for k, v in columns.items()}
    return [{"id": rid, **{k: lists[k][i] for k in lists}} for i, rid in enumerate(ids)]


def request_rows(workload: Workload, outcome: RequestOutcome) -> list[dict[str, Any]]:
    """One row per request: whether the run counts it (a steady-state trial's window), what
    the workload asked (data set, tier, arrival, lengths, SLOs), then its outcome, so that
    misses can be analysed per class."""
    outcomes = outcome_rows([r.id for r in workload.requests], outcome)
    counted = workload.counted
    return [
        {
            "id": r.id,
            "counted": i in counted,
            "dataset": r.source,
            "tier": r.tier,
            "arrival": r.arrival,
            "prompt_tokens": r.prompt_tokens,
            "output_tokens": r.output_tokens,
            "ttft_slo": r.ttft_slo,
            "tbt_slo": r.tbt_slo,
            **row,
        }
        for i, (r, row) in enumerate(zip(workload.requests, outcomes, strict=True))
    ]


def metrics_row(label: dict[str, Any], metrics: Metrics) -> dict[str, Any]:
    """A table row: the label columns, then the metrics users compare."""
    values = metrics.to_dict()
    return {**label, **{k: values[k] for k in METRIC_COLUMNS}}


def write_csv(path: StrPath, rows: Sequence[dict[str, Any]]) -> None:
    """Rows (dicts with the same keys) as CSV, atomically; None as an empty cell."""
    with replace_atomically(path) as temporary, temporary.open("w", newline="") as handle:
        if not rows:
            return
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        for row in rows:
            writer.writerow({k: "" if v is None else v for k, v in _clean(row).items()})


def write_json(path: StrPath, data: Any) -> None:
    """`dumps(data)` to `path`, creating the folder; atomically (a temporary file, renamed)."""
    write_text(path, dumps(data))


def write_results(path: StrPath, data: dict[str, Any], command: Sequence[str] | None) -> None:
    """`data` and its "provenance" (version, commit, `command`) as a results.json at `path`."""
    write_json(path, {**data, "provenance": provenance(command)})


def runs_document(runs: Sequence[RunSummary]) -> dict[str, Any]:
    """The deterministic document of a set of runs."""
    return {"runs": [r.to_dict() for r in runs]}


def timings_document(runs: Sequence[RunSummary]) -> dict[str, Any]:
    """Wall-clock and CPU figures of the runs (not reproducible; kept apart)."""
    return {
        "runs": [{"policy": r.spec.label, "rate": r.spec.rate, **r.stats.to_dict()} for r in runs]
    }


def trial_timings(trials: Sequence[RunSummary], wall_seconds: float) -> dict[str, Any]:
    """Wall-clock and CPU figures of a capacity search: each trial's (policy, seed, rate and
    engine figures) and the whole search's wall-clock time (not reproducible; kept apart)."""
    return {
        "wall_seconds": wall_seconds,
        "trials": [
            {"policy": t.spec.label, "seed": t.spec.seed, "rate": t.spec.rate, **t.stats.to_dict()}
            for t in trials
        ],
    }


def capacity_rows(results: Sequence[CapacityResult]) -> list[dict[str, Any]]:
    """One row per policy and seed: the capacity, the lowest rate above it that failed (the search
    stops when it is within the precision of the capacity; empty if none failed), the trials."""
    return [
        {
            "policy": r.policy,
            "seed": r.seed,
            "capacity": r.capacity,
            "lowest_failing_rate": r.failing,
            "trials": len(r.trials),
        }
        for r in results
    ]


def sweep_rows(runs: Sequence[RunSummary]) -> list[dict[str, Any]]:
    """One row per run: policy, rate, metrics."""
    return [metrics_row({"policy": r.spec.label, "rate": r.spec.rate}, r.metrics) for r in runs]
