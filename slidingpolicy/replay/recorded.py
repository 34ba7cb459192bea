"""A replay's results read back: every run (arm, cell, workload, metrics), the servers that
served them, and the settings they ran under, from one or more `results.json` folders.

A run's metrics are kept as written (`Metrics.to_dict` keys; None where a client could not
observe one), so that a reader compares them column for column with a simulated run's.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from slidingpolicy._paths import StrPath
from slidingpolicy.errors import InvalidRecordError
from slidingpolicy.replay.matrix import Cell
from slidingpolicy.runs.specs import WorkloadSpec

KV_LINE = re.compile(r"KV cache size: ([\d,]+) tokens")
"""How vLLM logs its KV cache's size at start."""


@attrs.frozen(slots=True)
class RecordedRun:
    """One replayed run: its arm, cell and workload, and its metrics as written."""

    arm: str
    cell: Cell
    workload: WorkloadSpec
    metrics: Mapping[str, Any]

    def metric(self, name: str) -> float:
        """The metric `name` as a float (NaN where it was not observed)."""
        value = self.metrics.get(name)
        return math.nan if value is None else float(value)


@attrs.frozen(slots=True)
class Recorded:
    """What one or more replays wrote: their runs, servers (`targets`) and settings."""

    runs: tuple[RecordedRun, ...]
    targets: tuple[Mapping[str, Any], ...]
    settings: tuple[Mapping[str, Any], ...]

    def arms(self) -> tuple[str, ...]:
        """The arms, in the order their first run appears."""
        return tuple(dict.fromkeys(r.arm for r in self.runs))

    def kv_tokens(self) -> int | None:
        """The smallest KV cache size the servers' logs report (None if none does)."""
        sizes = []
        for target in self.targets:
            log = target.get("log")
            if log is None or not Path(log).is_file():
                continue
            found = KV_LINE.findall(Path(log).read_text(errors="replace"))
            sizes += [int(size.replace(",", "")) for size in found]
        return min(sizes, default=None)


def _run(record: str, data: Any) -> RecordedRun:
    """A run as results.json writes it (`ReplayRun.to_dict`); one recorded before
    steady-state trials (no `whole`) was a finite trial."""
    try:
        rate = data["rate"]
        cell = Cell(None if rate is None else float(rate), int(data["seed"]), int(data["repeat"]))
        workload = data["workload"]
        given = {k: workload[k] for k in workload if k != "recorded"}
        spec = WorkloadSpec(**{"whole": True, **given})
        return RecordedRun(str(data["policy"]), cell, spec, dict(data["metrics"]))
    except (KeyError, TypeError, ValueError) as error:
        raise InvalidRecordError(record, "runs", f"a run is malformed ({error})") from None


def read_replay(folders: Sequence[StrPath]) -> Recorded:
    """The runs, targets and settings of the replays whose results.json are in `folders`."""
    runs: list[RecordedRun] = []
    targets: list[Mapping[str, Any]] = []
    settings: list[Mapping[str, Any]] = []
    for folder in folders:
        path = Path(folder) / "results.json"
        record = f"replay results {path}"
        try:
            document = json.loads(path.read_text())
        except OSError:
            raise InvalidRecordError(record, "path", "no such file") from None
        except ValueError as error:
            raise InvalidRecordError(record, "json", str(error)) from None
        if not isinstance(document, dict) or not isinstance(document.get("runs"), list):
            raise InvalidRecordError(record, "runs", "missing: not a replay's results.json")
        runs += [_run(record, run) for run in document["runs"]]
        targets += list(document.get("targets") or ())
        settings.append(dict(document.get("settings") or {}))
    if not runs:
        raise InvalidRecordError(f"replay results in {', '.join(map(str, folders))}", "runs",
                                 "holds no run")  # fmt: skip
    return Recorded(tuple(runs), tuple(targets), tuple(settings))
