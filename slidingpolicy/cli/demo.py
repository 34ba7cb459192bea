"""`slidingpolicy demo`: every policy on mixed-v1 with the default hardware, swept and sized."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from slidingpolicy.cli.options import OutOpt, SeedOpt, WorkersOpt, run_spec
from slidingpolicy.cli.output import console, fmt, pct, progress


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
    import attrs

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
    with progress("rate sweep", len(policies) * len(rates)) as advance:
        runs = sweep(base, policies, rates, workers, on_done=lambda _: advance(1))
    known = [
        [(r.spec.rate, r.metrics.attainment) for r in runs if r.spec.policy == p] for p in policies
    ]
    with progress("capacity search", len(policies)) as advance:
        found = capacities(
            [attrs.evolve(base, policy=p) for p in policies],
            workers=workers,
            known=known,
            on_done=lambda _: advance(1),
        )
    folder = out / "demo"
    write_json(
        folder / "results.json",
        {**runs_document(runs), "capacity": [c.to_dict() for c in found]},
    )
    write_json(folder / "timings.json", timings_document(runs))
    write_csv(folder / "sweep.csv", sweep_rows(runs))
    write_csv(folder / "capacity.csv", capacity_rows(found))
    plot_sweep(runs, folder / "sweep.png", f"mixed-v1, {requests} requests per run")
    plot_capacity(found, folder / "capacity.png", "capacity on mixed-v1 (qwen2.5-7b, 2× RTX 3090)")
    table = Table(title=f"mixed-v1 on qwen2.5-7b / 2× RTX 3090 — {requests} requests per run")
    table.add_column("policy", no_wrap=True)
    table.add_column("capacity (req/s)", justify="right")
    for rate in rates:
        table.add_column(f"SLO @ {rate:g}/s", justify="right")
    table.add_column(f"p99 TTFT @ {rates[1]:g}/s (s)", justify="right")
    for policy, cap in zip(policies, found, strict=True):
        mine = [r for r in runs if r.spec.policy == policy]
        row = [policy, fmt(cap.capacity, 2), *(pct(r.metrics.attainment) for r in mine)]
        table.add_row(*row, fmt(mine[1].metrics.ttft_p99, 2))
    console.print(table)
    console.print(
        f"results in {folder}/ (results.json, sweep.csv, capacity.csv, sweep.png, capacity.png)"
        f" — {time.perf_counter() - started:.0f} s"
    )
