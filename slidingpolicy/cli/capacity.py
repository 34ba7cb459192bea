"""`slidingpolicy capacity`: each policy's highest Poisson rate with ≥99% SLO attainment."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from slidingpolicy.cli.options import (
    TRIAL_REQUESTS,
    TRIAL_SEEDS,
    CliError,
    GpuOpt,
    HardwareChoice,
    ModelOpt,
    OutOpt,
    PoliciesOpt,
    PredictorOpt,
    ProfileOpt,
    RayOpt,
    RequestsOpt,
    SeedOpt,
    SeedsOpt,
    SloScaleOpt,
    TiersOpt,
    TpOpt,
    WorkersOpt,
    WorkloadChoice,
    WorkloadOpt,
    parse_policies,
    run_spec,
    writable_folder,
)
from slidingpolicy.cli.output import console, fmt, progress, trying

if TYPE_CHECKING:
    from slidingpolicy.engine.capacity import CapacityResult, CapacitySpread


def capacity(
    policy: PoliciesOpt = "slidingserve",
    gpu: GpuOpt = "rtx3090",
    model: ModelOpt = "qwen2.5-7b",
    tp: TpOpt = 2,
    profile: ProfileOpt = None,
    workload: WorkloadOpt = "mixed-v1",
    requests: RequestsOpt = TRIAL_REQUESTS,
    seed: SeedOpt = 0,
    seeds: SeedsOpt = TRIAL_SEEDS,
    slo_scale: SloScaleOpt = 1.0,
    slo_tiers: TiersOpt = False,
    start: Annotated[
        float,
        typer.Option(
            "--start",
            help="First rate tried (req/s), from 1/64 to 4096: a search takes about 7 trials "
            "from 1 req/s, at most 25 from anywhere.",
        ),
    ] = 1.0,
    predictor: PredictorOpt = None,
    workers: WorkersOpt = None,
    ray: RayOpt = None,
    out: OutOpt = Path("results/capacity"),
) -> None:
    """Find each policy's capacity: the highest Poisson rate with ≥99% SLO attainment.

    The search brackets the rate, then bisects until the lowest failing rate is within 2.5%
    (the search precision) of the highest passing one. Writes results.json, capacity.csv and
    capacity.png under OUT.
    """
    import attrs

    from slidingpolicy.engine.capacity import MAX_RATE, MIN_RATE, PRECISION, capacities, spreads
    from slidingpolicy.engine.plots import plot_capacity
    from slidingpolicy.engine.results import capacity_rows, write_csv, write_json

    chosen = parse_policies(policy)
    if not MIN_RATE <= start <= MAX_RATE:
        raise CliError(
            f"--start={start:g} must be between {MIN_RATE:g} and {MAX_RATE:g} req/s, the rates a "
            "search explores"
        )
    writable_folder(out)
    checked = run_spec(
        chosen[0],
        HardwareChoice(gpu, model, tp, profile),
        WorkloadChoice(workload, requests, seed, slo_scale=slo_scale, slo_tiers=slo_tiers),
        predictor=predictor,
    )
    base = checked.spec
    bases = [attrs.evolve(base.with_policy(p), seed=seed + j) for p in chosen for j in range(seeds)]
    with progress("capacity search", len(bases)) as ticker:
        found = capacities(
            bases,
            start,
            workers=workers,
            on_done=lambda _: ticker(1),
            on_round=lambda trials: ticker.note(trying(trials)),
            ray=ray,
        )
    write_json(
        out / "results.json", {"base": base.to_dict(), "capacity": [c.to_dict() for c in found]}
    )
    write_csv(out / "capacity.csv", capacity_rows(found))
    hardware = checked.hardware.name
    spread = spreads(found)
    trial = f"{requests} requests per trial, {seeds} seed{'s' if seeds > 1 else ''}"
    title = f"capacity on {workload}, {hardware}, {trial}"
    plot_capacity({s.policy: list(s.capacities) for s in spread}, out / "capacity.png", title)
    console.print(capacity_table(found, spread, seeds, title))
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
    console.print(f"results in {out}/ (results.json, capacity.csv, capacity.png)")


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
