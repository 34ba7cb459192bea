"""A replay session: the checked plan, every cell of the matrix run under every arm (the
servers started, made ready and stopped as it goes), and the results written."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, Protocol

import attrs

if TYPE_CHECKING:
    from slidingpolicy._paths import StrPath
    from slidingpolicy.replay.matrix import Cell
    from slidingpolicy.replay.replay_results import ReplayRun
    from slidingpolicy.replay.targets import Target
    from slidingpolicy.runs.specs import WorkloadSpec
    from slidingpolicy.workloads import Workload


class Ticker(Protocol):
    """A progress bar's handle: counts finished requests, notes what runs."""

    def __call__(self, n: int) -> None: ...

    def note(self, text: str) -> None: ...


Progress = Callable[[str, int], AbstractContextManager[Ticker]]
"""Opens a progress bar of a label and a total (the command's, on the terminal)."""


@attrs.frozen(slots=True)
class Plan:
    """What to replay, checked: the workload, the matrix, the request and overall bounds."""

    spec: WorkloadSpec
    recorded_times: bool
    cells: tuple[Cell, ...]
    timeout: float
    time_limit: float


def replay_all(
    plan: Plan,
    targets: Sequence[Target],
    vocab: int,
    keep: bool,
    start: tuple[float, int],
    out: StrPath,
    invocation: dict[str, Any],
    progress: Progress,
) -> tuple[list[ReplayRun], list[dict[str, Any]]]:
    """Run the matrix (`_run_matrix`) and write what ran under `out` (`write_results`), even
    when a later run fails; the runs and the runs skipped for time."""
    runs: list[ReplayRun] = []
    skipped: list[dict[str, Any]] = []
    try:
        _run_matrix(plan, targets, vocab, keep, start, runs, skipped, progress)
    finally:
        if runs:
            write_results(out, plan, runs, skipped, invocation, targets)
    return runs, skipped


@contextmanager
def stopped_on_sigterm() -> Iterator[None]:
    """SIGTERM ends the command as Ctrl-C does, so that the servers it holds are stopped."""

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _run_matrix(
    plan: Plan,
    targets: Sequence[Target],
    vocab: int,
    keep: bool,
    start: tuple[float, int],
    runs: list[ReplayRun],
    skipped: list[dict[str, Any]],
    progress: Progress,
) -> None:
    """Every cell under every target, interleaved, appending each run to `runs` as it ends
    (what ran is kept if a later run fails) and each run skipped for time to `skipped`;
    `start` is the servers' start timeout and warm-up count, `progress` the bar it ticks."""
    from slidingpolicy.replay.matrix import interleaved

    started = time.monotonic()
    start_timeout, warmup = start
    if keep:
        _start_all(targets, start_timeout, warmup, plan.timeout)
    schedule = interleaved(plan.cells, targets)
    workloads: dict[Cell, Workload] = {}
    with progress("replay", len(schedule) * plan.spec.requests) as ticker:
        for cell, target in schedule:
            if time.monotonic() - started > plan.time_limit:
                skipped.append({"policy": target.label, **attrs.asdict(cell)})
                continue
            ticker.note(f"{target.label} at {_rate_text(cell.rate)}")
            if not keep:
                target.ready(start_timeout, warmup, plan.timeout)
            if cell not in workloads:
                workloads[cell] = _workload(plan, cell)
            runs.append(_run_one(plan, target, cell, workloads[cell], vocab, ticker))
            if not keep:
                target.stop()


def _start_all(targets: Sequence[Target], timeout: float, warmup: int, request: float) -> None:
    """Start every launched server at once, then make each ready in turn."""
    for target in targets:
        if target.server is not None and not target.server.alive():
            target.server.start()
            target.starts += 1
    for target in targets:
        if target.server is not None:
            target.server.wait_ready(timeout)
        target.ready(timeout, warmup, request)


def _workload(plan: Plan, cell: Cell) -> Workload:
    """The cell's requests: Poisson at its rate, or the trace's times (rescaled to its rate)."""
    from slidingpolicy.replay.matrix import cell_arrivals

    return plan.spec.build(cell_arrivals(cell.rate, plan.recorded_times), cell.seed)


def _run_one(
    plan: Plan, target: Target, cell: Cell, workload: Workload, vocab: int, ticker: Any
) -> ReplayRun:
    """Replay the cell's workload against `target` and judge it."""
    import asyncio

    from slidingpolicy.replay.client import send_all
    from slidingpolicy.replay.measure import failures, judge, send_lag
    from slidingpolicy.replay.replay_results import ReplayRun
    from slidingpolicy.replay.requests import completions

    sent = completions(workload, (cell.seed, cell.repeat), vocab)
    with target.measuring() as model:
        began = time.monotonic()
        measured = asyncio.run(
            send_all(
                target.url,
                model,
                sent,
                plan.timeout,
                on_done=lambda _: ticker(1),
                counted=workload.counted,
            )
        )
        wall = time.monotonic() - began
    metrics, outcome = judge(workload, measured)
    return ReplayRun(
        target.label,
        cell,
        plan.spec,
        workload,
        tuple(measured),
        metrics,
        outcome,
        failures(workload, measured),
        wall,
        send_lag(workload, measured),
    )


def _rate_text(rate: float | None) -> str:
    return "recorded times" if rate is None else f"{rate:g}/s"


def write_results(
    out: StrPath,
    plan: Plan,
    runs: Sequence[ReplayRun],
    skipped: Sequence[dict[str, Any]],
    invocation: dict[str, Any],
    targets: Sequence[Target],
) -> None:
    """results.json (with `invocation`: the command line and its settings), runs.csv,
    summary.csv, requests.csv and replay.png under `out`."""
    out = Path(out)
    from slidingpolicy.replay.replay_results import plot_replay, summary_rows
    from slidingpolicy.runs.results import write_csv, write_json

    write_json(
        out / "results.json",
        {
            **invocation,
            "targets": [t.to_dict() for t in targets],
            "summary": summary_rows(runs),
            "runs": [r.to_dict() for r in runs],
            "skipped": list(skipped),
        },
    )
    write_csv(out / "runs.csv", [r.row() for r in runs])
    write_csv(out / "summary.csv", summary_rows(runs))
    write_csv(
        out / "requests.csv", [{**r.label(), **row} for r in runs for row in r.request_rows()]
    )
    if runs:
        title = f"{plan.spec.label}, {plan.spec.requests} requests per run, replayed"
        plot_replay(runs, out / "replay.png", title)
