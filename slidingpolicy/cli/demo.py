"""`slidingpolicy demo`: every policy on mixed-v1 with the default hardware, swept and sized."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from slidingpolicy.cli.options import (
    OutOpt,
    SeedOpt,
    WorkersOpt,
    run_spec,
    writable_folder,
)
from slidingpolicy.cli.output import console, fmt, pct, progress, trying

if TYPE_CHECKING:
    from slidingpolicy.engine.capacity import CapacityResult
    from slidingpolicy.engine.sweep import RunSummary


def demo(
    out: OutOpt = Path("results"),
    requests: Annotated[int, typer.Option("--requests", "-n", help="Requests per run.")] = 100,
    workers: WorkersOpt = None,
    seed: SeedOpt = 0,
) -> None:
    """Compare every policy on mixed-v1 with the default hardware (qwen2.5-7b, 2× RTX 3090).

    A short rate sweep, then each policy's capacity; a table on screen, JSON, CSV and PNG
    under OUT/demo.
    """

    from slidingpolicy.engine.capacity import capacities
    from slidingpolicy.engine.plots import plot_capacity, plot_sweep
    from slidingpolicy.engine.results import (
        capacity_rows,
        runs_document,
        sweep_rows,
        timings_document,
        write_csv,
        write_json,
    )
    from slidingpolicy.engine.sweep import sweep
    from slidingpolicy.policies import names

    started = time.perf_counter()
    folder = out / "demo"
    writable_folder(folder)
    base = run_spec(
        "slidingserve",
        "rtx3090",
        "qwen2.5-7b",
        2,
        None,
        "mixed-v1",
        None,
        requests,
        seed,
        1.0,
        False,
    )
    policies = list(names())
    rates = [0.5, 1.0, 1.5, 2.0]
    with progress("rate sweep", len(policies) * len(rates)) as ticker:
        runs = sweep(base, policies, rates, workers, on_done=lambda _: ticker(1))
    known = [
        [(r.spec.rate, r.metrics.attainment) for r in runs if r.spec.label == p] for p in policies
    ]
    with progress("capacity search", len(policies)) as ticker:
        found = capacities(
            [base.with_policy(p) for p in policies],
            workers=workers,
            known=known,
            on_done=lambda _: ticker(1),
            on_round=lambda trials: ticker.note(trying(trials)),
        )
    write_json(
        folder / "results.json",
        {**runs_document(runs), "capacity": [c.to_dict() for c in found]},
    )
    write_json(folder / "timings.json", timings_document(runs))
    write_csv(folder / "sweep.csv", sweep_rows(runs))
    write_csv(folder / "capacity.csv", capacity_rows(found))
    setup = f"mixed-v1, qwen2.5-7b on 2× RTX 3090, {requests} requests per run"
    plot_sweep(runs, folder / "sweep.png", setup)
    plot_capacity(
        {c.policy: [c.capacity] for c in found},
        folder / "capacity.png",
        f"capacity on mixed-v1, qwen2.5-7b on 2× RTX 3090, {requests} requests per trial",
    )
    console.print(demo_table(policies, rates, runs, found, setup))
    console.print(
        f"results in {folder}/ (results.json, sweep.csv, capacity.csv, sweep.png, capacity.png)"
        f" — {time.perf_counter() - started:.0f} s"
    )


def demo_table(
    policies: Sequence[str],
    rates: Sequence[float],
    runs: Sequence[RunSummary],
    found: Sequence[CapacityResult],
    title: str,
) -> Table:
    """Capacity, attainment at each rate and p99 TTFT at the second rate, one row per policy;
    two-line headers so that it reads at 80 columns."""
    table = Table(title=title)
    table.add_column("policy", no_wrap=True)
    table.add_column("capacity\n(req/s)", justify="right", no_wrap=True)
    for rate in rates:
        table.add_column(f"SLO @\n{rate:g}/s", justify="right", no_wrap=True)
    table.add_column(f"p99 TTFT\n@{rates[1]:g}/s (s)", justify="right", no_wrap=True)
    for policy, cap in zip(policies, found, strict=True):
        mine = [r for r in runs if r.spec.label == policy]
        row = [escape(policy), fmt(cap.capacity, 2), *(pct(r.metrics.attainment) for r in mine)]
        table.add_row(*row, fmt(mine[1].metrics.ttft_p99, 2))
    return table
