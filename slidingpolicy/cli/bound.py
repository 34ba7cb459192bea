"""`slidingpolicy bound`: the highest Poisson rate at which 99% of requests could meet their
SLOs on this hardware in the long run, whatever the policy."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from slidingpolicy.cli.checked_run import HardwareChoice, WorkloadChoice, run_spec
from slidingpolicy.cli.option_sets import (
    HARDWARE,
    SEED,
    SLO_SCALE,
    SLO_TIERS,
    TRACE,
    WHOLE,
    WORKLOAD_NAME,
    OptionSet,
    Param,
    takes,
)
from slidingpolicy.cli.options import CliError, OutOpt, writable_folder
from slidingpolicy.cli.output import command_line, console, fmt, pct

if TYPE_CHECKING:
    from slidingpolicy.bound.fluid import FluidBound
    from slidingpolicy.bound.limits import TrialBound


BoundRequestsOpt = Annotated[
    int,
    typer.Option(
        "--requests",
        "-n",
        help="With --seeds: requests per trial of the trace bound; with --trace: how many "
        "of its requests make the population.",
        rich_help_panel="Workload",
    ),
]
TrialsOpt = Annotated[
    int,
    typer.Option(
        "--seeds",
        min=0,
        max=100,
        help="Also bound the capacity search's own trials (SEED, SEED+1, ...; 0: not).",
        rich_help_panel="Workload",
    ),
]
BoundReplicasOpt = Annotated[
    int,
    typer.Option(
        "--replicas",
        min=1,
        help="Also the limit of this many replicas of the hardware behind any router: that "
        "many times the bound (docs/cluster.md).",
    ),
]
BOUND_WORKLOAD = OptionSet(
    WorkloadChoice,
    (
        WORKLOAD_NAME,
        TRACE,
        SLO_SCALE,
        SLO_TIERS,
        Param("requests", BoundRequestsOpt, 1000),
        SEED,
        Param("seeds", TrialsOpt, 0),
        WHOLE,
    ),
    WorkloadChoice,
)
"""The workload's options, with 1000 requests and no trials by default."""


@takes(HARDWARE.only("gpu", "model", "tp", "profile", "kv_tokens"), BOUND_WORKLOAD)
def bound(
    context: typer.Context,
    *,
    hardware: HardwareChoice,
    workload: WorkloadChoice,
    replicas: BoundReplicasOpt = 1,
    as_json: Annotated[
        bool, typer.Option("--json", metavar=" ", help="Print the result as JSON only.")
    ] = False,
    out: OutOpt = Path("results/bound"),
) -> None:
    """Bound the capacity any policy can reach: the fluid limit of the workload on the hardware.

    A linear program over iteration types (proofs/bound.md): GPU time, the work every request
    needs (prompt, decode tokens, attention), the iterations its tokens' deadlines force
    (eq. 1), the KV cache by Little's law, and the 1% of requests allowed to miss. Prints the
    bound, the constraints that bind it and the iterations at the optimum; with --seeds, also
    the capacity the trace bound allows on the capacity search's own trials (their counted
    requests: a schedule may drop a steady-state trial's warm-up and tail). With --replicas
    N, also the limit of N replicas of the hardware: N times the bound. Writes results.json
    under OUT.
    """
    import attrs

    from slidingpolicy.bound.limits import limit_of, replicas_limit, trial_bound
    from slidingpolicy.runs.results import write_results

    seeds = workload.seeds
    writable_folder(out)
    checked = run_spec("slidingserve", hardware, workload)
    base = checked.spec
    if workload.trace is not None and seeds:
        raise CliError("--seeds bounds Poisson trials of a named --workload, not a --trace")
    found = limit_of(base)
    trials = [trial_bound(attrs.evolve(base, seed=base.seed + j)) for j in range(seeds)]
    document = {
        **found.to_dict(),
        "workload": base.workload.label,
        "hardware": checked.hardware.name,
        "trials": [{"seed": t.seed, "capacity": t.capacity, "failing": t.failing} for t in trials],
        "requests_per_trial": base.workload.requests if seeds else None,
    }
    if replicas > 1:
        document["replicas"] = replicas
        document["replicas_limit"] = replicas_limit(found.bound, replicas)
    write_results(out / "results.json", document, command_line(context))
    if as_json:
        print(json.dumps(document, ensure_ascii=False))
        return
    console.print(
        bound_table(
            found, trials, f"bound on {base.workload.label}, {checked.hardware.name}", replicas
        )
    )
    console.print(f"results in {out}/ (results.json)")


def bound_table(
    found: FluidBound, trials: list[TrialBound], title: str, replicas: int = 1
) -> Table:
    """The bound, what binds it, the iterations at the optimum and the trials' bounds; the
    limit of `replicas` replicas when more than one."""
    from slidingpolicy.bound.fluid import CONSTRAINTS
    from slidingpolicy.bound.limits import replicas_limit

    table = Table(title=title, show_header=False)
    table.add_column("what", no_wrap=True)
    table.add_column("value")
    table.add_row("bound (req/s)", fmt(found.bound, 3))
    if replicas > 1:
        whole = fmt(replicas_limit(found.bound, replicas), 3)
        table.add_row(f"limit of {replicas} replicas (req/s)", whole)
    table.add_row("binding", "; ".join(CONSTRAINTS[b] for b in found.binding))
    table.add_row("without pacing (req/s)", fmt(found.unpaced, 3))
    table.add_row("with an unlimited KV cache (req/s)", fmt(found.unlimited_kv, 3))
    table.add_row("pacing floor (iterations/s)", fmt(found.pacing, 2))
    table.add_row("iterations/s at the optimum", fmt(found.iterations, 2))
    apart = 1e3 / found.iterations
    table.add_row("mean iteration", f"{found.mean_tokens:.0f} tokens, {apart:.0f} ms apart")
    types = ", ".join(f"{t.size:.0f} tokens × {t.rate:.3g}/s" for t in found.token_types)
    table.add_row("iteration types", types)
    table.add_row("GPU time", ", ".join(f"{name} {pct(share)}" for name, share in found.time_split))
    for t in trials:
        table.add_row(
            f"trials, seed {t.seed} (req/s)", f"{fmt(t.capacity, 3)} (fails at {fmt(t.failing, 3)})"
        )
    return table
