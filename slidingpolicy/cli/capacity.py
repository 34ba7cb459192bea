"""`slidingpolicy capacity`: each policy's highest Poisson rate with ≥99% SLO attainment."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from slidingpolicy.cli.checked_run import HardwareChoice, WorkloadChoice, run_spec
from slidingpolicy.cli.option_sets import HARDWARE, SEEDED_TRIAL_WORKLOAD, takes
from slidingpolicy.cli.options import (
    CliError,
    OutOpt,
    PoliciesOpt,
    PredictorOpt,
    RayOpt,
    WorkersOpt,
    parse_policies,
    writable_folder,
)
from slidingpolicy.cli.output import can_plot, command_line, console, fmt, pct, progress, trying
from slidingpolicy.cli.plugins import PluginOpt, load_plugins

if TYPE_CHECKING:
    from slidingpolicy.bound.fluid import FluidBound
    from slidingpolicy.runs.capacity_search import CapacityResult, CapacitySpread
    from slidingpolicy.runs.specs import RunSpec, RunSummary


@takes(HARDWARE, SEEDED_TRIAL_WORKLOAD)
def capacity(
    context: typer.Context,
    policy: PoliciesOpt = "slidingserve",
    *,
    hardware: HardwareChoice,
    workload: WorkloadChoice,
    start: Annotated[
        float,
        typer.Option(
            "--start",
            help="First rate tried (req/s), from 1/64 to 4096: a search takes about 7 trials "
            "from 1 req/s, at most 25 from anywhere.",
        ),
    ] = 1.0,
    predictor: PredictorOpt = None,
    plugin: PluginOpt = None,
    workers: WorkersOpt = None,
    ray: RayOpt = None,
    out: OutOpt = Path("results/capacity"),
) -> None:
    """Find each policy's capacity: the highest Poisson rate with ≥99% SLO attainment.

    With a --trace, the rate tried rescales the trace's recorded arrival times to that mean
    rate (see --trace); a trace without times arrives as a Poisson process at the rate.

    The search brackets the rate, then bisects until the lowest failing rate is within 2.5%
    (the search precision) of the highest passing one. Writes results.json, timings.json
    (each trial's wall-clock and CPU figures), capacity.csv and capacity.png under OUT.
    """
    import attrs

    from slidingpolicy.runs.capacity_search import (
        MAX_RATE,
        MIN_RATE,
        PRECISION,
        capacities,
        spreads,
    )
    from slidingpolicy.runs.results import (
        capacity_rows,
        trial_timings,
        write_csv,
        write_json,
        write_results,
    )

    load_plugins(plugin)
    chosen = parse_policies(policy)
    if not MIN_RATE <= start <= MAX_RATE:
        raise CliError(
            f"--start={start:g} must be between {MIN_RATE:g} and {MAX_RATE:g} req/s, the rates a "
            "search explores"
        )
    writable_folder(out)
    checked = run_spec(chosen[0], hardware, workload, predictor=predictor)
    base, seeds = checked.spec, workload.seeds
    bases = [
        attrs.evolve(base.with_policy(p), seed=base.seed + j) for p in chosen for j in range(seeds)
    ]
    ran: list[RunSummary] = []
    started = time.perf_counter()
    with progress("capacity search", len(bases)) as ticker:
        found = capacities(
            bases,
            start,
            workers=workers,
            on_done=lambda _: ticker(1),
            on_round=lambda trials: ticker.note(trying(trials)),
            ray=ray,
            on_trial=ran.append,
        )
    write_json(out / "timings.json", trial_timings(ran, time.perf_counter() - started))
    limit = limit_of(base)
    write_results(
        out / "results.json",
        {
            "base": base.to_dict(),
            "capacity": [c.to_dict() for c in found],
            "bound": None if limit is None else limit.to_dict(),
        },
        command_line(context),
    )
    write_csv(out / "capacity.csv", capacity_rows(found))
    spread = spreads(found)
    n = base.workload.requests
    trial = f"{n} requests per trial, {seeds} seed{'s' if seeds > 1 else ''}"
    title = f"capacity on {base.workload.label}, {checked.hardware.name}, {trial}"
    if can_plot():
        from slidingpolicy.figures.plots import plot_capacity

        plot_capacity({s.policy: list(s.capacities) for s in spread}, out / "capacity.png", title)
    console.print(capacity_table(found, spread, seeds, title))
    for line in bound_lines(spread, limit):
        console.print(line)
    if seeds > 1:
        console.print(
            f"capacity: the mean over the seeds of the highest passing rate (each within "
            f"{100 * PRECISION:g}%, the search precision); min–max: the lowest and highest seed"
        )
    else:
        console.print(
            "capacity: highest passing rate; lowest failing: the lowest rate above it that "
            f"missed 99% (within {100 * PRECISION:g}%, the search precision)"
        )
    console.print(f"results in {out}/ (results.json, timings.json, capacity.csv, capacity.png)")


def capacity_table(
    found: Sequence[CapacityResult], spread: Sequence[CapacitySpread], seeds: int, title: str
) -> Table:
    """One row per policy: its capacity, and its min–max over the seeds (or, with one seed,
    the lowest failing rate), and the trials it took."""
    table = Table(title=title)
    table.add_column("policy", no_wrap=True)
    table.add_column("capacity (req/s)", justify="right", no_wrap=True)
    if seeds > 1:
        table.add_column("min–max (req/s)", justify="right", no_wrap=True)
    else:
        table.add_column("lowest failing (req/s)", justify="right")
    table.add_column("trials", justify="right")
    for s in spread:
        mine = [c for c in found if c.policy == s.policy]
        extra = f"{fmt(s.low, 3)}–{fmt(s.high, 3)}" if seeds > 1 else fmt(mine[0].failing, 3)
        trials = str(sum(len(c.trials) for c in mine))
        table.add_row(escape(s.policy), fmt(s.mean, 3), extra, trials)
    return table


def shares_line(spread: Sequence[CapacitySpread], bound: float) -> str:
    """Each policy's mean capacity as a share of the bound, highest first."""
    from slidingpolicy.bound.limits import share

    ranked = sorted(spread, key=lambda s: -s.mean)
    return "of the bound: " + ", ".join(
        f"{escape(s.policy)} {pct(share(s.mean, bound))}" for s in ranked
    )


def limit_of(base: RunSpec) -> FluidBound | None:
    """The bound of the run's workload on its hardware (`slidingpolicy bound`); None for a
    hardware model the bound does not read (a real engine's step trace)."""
    from slidingpolicy.bound import limits
    from slidingpolicy.errors import InvalidRecordError

    try:
        return limits.limit_of(base)
    except InvalidRecordError:
        return None


def bound_lines(spread: Sequence[CapacitySpread], limit: FluidBound | None) -> list[str]:
    """The shares, and what they divide by (or why there is no bound)."""
    if limit is None:
        return [
            "bound: none for a step trace's hardware model (the bound reads the roofline-based "
            "models; proofs/bound.md)"
        ]
    return [
        shares_line(spread, limit.bound),
        f"bound: {fmt(limit.bound, 3)} req/s, the highest Poisson rate at which 99% of requests "
        f"could meet their SLOs on this hardware, whatever the policy (binding: "
        f"{', '.join(limit.binding)}; `slidingpolicy bound` explains it)",
    ]
