"""`slidingpolicy demo`: every policy on mixed-v1 with the default hardware, swept and sized."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from slidingpolicy.cli.capacity import (
    bound_lines,
    capacity_text,
    limit_of,
    ranked,
    trials_line,
    unbounded_lines,
)
from slidingpolicy.cli.checked_run import HardwareChoice, WorkloadChoice, run_spec
from slidingpolicy.cli.options import (
    TRIAL_SEEDS,
    OutOpt,
    SeedOpt,
    SeedsOpt,
    WorkersOpt,
    writable_folder,
)
from slidingpolicy.cli.output import can_plot, command_line, console, fmt, pct, progress, trying

DEMO_REQUESTS = 600
"""Requests per run in the demo, to finish in under two minutes on two cores (1000 take
2 min 6 s). Over three seeds the ranking at 600 is the ranking of 1000 × 10 seeds and of
3000 × 3 (docs/decisions.md, "Capacity without bias")."""

if TYPE_CHECKING:
    from slidingpolicy.runs.capacity_search import CapacityResult, CapacitySpread
    from slidingpolicy.runs.specs import RunSpec, RunSummary


def demo(
    context: typer.Context,
    out: OutOpt = Path("results"),
    requests: Annotated[int, typer.Option("--requests", "-n", help="Requests per run.")] = (
        DEMO_REQUESTS
    ),
    workers: WorkersOpt = None,
    seed: SeedOpt = 0,
    seeds: SeedsOpt = TRIAL_SEEDS,
) -> None:
    """Compare every policy on mixed-v1 with the default hardware (qwen2.5-7b, 2× RTX 3090).

    A short rate sweep (seed SEED), then each policy's capacity over SEEDS seeds (mean and
    min–max); a table on screen, JSON, CSV and PNG under OUT/demo.
    """
    from slidingpolicy.policies import names
    from slidingpolicy.runs.capacity_search import spreads
    from slidingpolicy.runs.results import (
        capacity_rows,
        runs_document,
        sweep_rows,
        timings_document,
        write_csv,
        write_json,
        write_results,
    )
    from slidingpolicy.runs.specs import sweep

    started = time.perf_counter()
    folder = out / "demo"
    writable_folder(folder)
    base = run_spec(
        "slidingserve",
        HardwareChoice("rtx3090", "qwen2.5-7b", 2),
        WorkloadChoice("mixed-v1", requests, seed),
    ).spec
    policies = list(names())
    rates = [0.5, 1.0, 1.5, 2.0]
    with progress("rate sweep", len(policies) * len(rates)) as ticker:
        runs = sweep(base, policies, rates, workers, on_done=lambda _: ticker(1))
    found = demo_capacities(base, policies, runs, seeds, workers)
    limit = limit_of(base)
    write_results(
        folder / "results.json",
        {
            **runs_document(runs),
            "capacity": [c.to_dict() for c in found],
            "bound": None if limit is None else limit.to_dict(),
        },
        command_line(context),
    )
    write_json(folder / "timings.json", timings_document(runs))
    write_csv(folder / "sweep.csv", sweep_rows(runs))
    write_csv(folder / "capacity.csv", capacity_rows(found))
    setup = f"mixed-v1, qwen2.5-7b on 2× RTX 3090, {requests} requests per run"
    trial = f"{requests} requests per trial, {seeds} seed{'s' if seeds > 1 else ''}"
    spread = spreads(found)
    if can_plot():
        from slidingpolicy.figures.plots import plot_capacity, plot_sweep

        plot_sweep(runs, folder / "sweep.png", setup)
        plot_capacity(
            {s.policy: list(s.capacities) for s in spread if s.bounded},
            folder / "capacity.png",
            f"capacity on mixed-v1, qwen2.5-7b on 2× RTX 3090, {trial}",
        )
    console.print(demo_table(rates, runs, spread, f"{setup}; capacity over {seeds} seeds"))
    for line in [trials_line(base), *unbounded_lines(spread), *bound_lines(spread, limit)]:
        console.print(line)
    console.print(
        f"results in {folder}/ (results.json, sweep.csv, capacity.csv, sweep.png, capacity.png)"
        f" — {time.perf_counter() - started:.0f} s"
    )


def demo_capacities(
    base: RunSpec,
    policies: Sequence[str],
    runs: Sequence[RunSummary],
    seeds: int,
    workers: int | None,
) -> list[CapacityResult]:
    """Each policy's capacity on seeds base.seed, base.seed + 1, ...; the sweep's `runs` (of
    the first seed) are trials already known."""
    import attrs

    from slidingpolicy.runs.capacity_search import capacities

    known = [
        [(r.spec.rate, r.metrics.attainment) for r in runs if r.spec.label == p] for p in policies
    ]
    seed = base.seed
    bases = [
        attrs.evolve(base.with_policy(p), seed=seed + j) for p in policies for j in range(seeds)
    ]
    with progress("capacity search", len(bases)) as ticker:
        return capacities(
            bases,
            workers=workers,
            known=[known[i] if j == 0 else [] for i in range(len(policies)) for j in range(seeds)],
            on_done=lambda _: ticker(1),
            on_round=lambda trials: ticker.note(trying(trials)),
        )


def demo_table(
    rates: Sequence[float],
    runs: Sequence[RunSummary],
    spread: Sequence[CapacitySpread],
    title: str,
) -> Table:
    """Capacity (mean and min–max over the seeds) and attainment at each rate, one row per
    policy, highest mean capacity first; two-line headers so that it reads at 80 columns
    (tail latencies are in sweep.csv; the share of the bound on the line below)."""
    table = Table(title=title)
    table.add_column("policy", no_wrap=True)
    table.add_column("capacity\n(req/s)", justify="right", no_wrap=True)
    table.add_column("min–max\n(req/s)", justify="right", no_wrap=True)
    for rate in rates:
        table.add_column(f"SLO @\n{rate:g}/s", justify="right", no_wrap=True)
    for cap in ranked(spread):
        mine = [r for r in runs if r.spec.label == cap.policy]
        low_high = f"{fmt(cap.low, 2)}–{fmt(cap.high, 2)}" if cap.bounded else "—"
        row = [escape(cap.policy), capacity_text(cap, 2), low_high]
        row += [pct(r.metrics.attainment) for r in mine]
        table.add_row(*row)
    return table
