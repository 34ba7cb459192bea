"""`slidingpolicy capacity`: each policy's highest Poisson rate with ≥99% SLO attainment in
steady state."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from slidingpolicy.cli.checked_run import HardwareChoice, WorkloadChoice, run_spec
from slidingpolicy.cli.cluster_options import ClusterChoice
from slidingpolicy.cli.option_sets import CLUSTER, HARDWARE, SEEDED_TRIAL_WORKLOAD, takes
from slidingpolicy.cli.options import (
    CliError,
    OutOpt,
    PoliciesOpt,
    PredictorOpt,
    RayOpt,
    StrictOpt,
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


@takes(HARDWARE, SEEDED_TRIAL_WORKLOAD, CLUSTER)
def capacity(
    context: typer.Context,
    policy: PoliciesOpt = "slidingserve",
    *,
    hardware: HardwareChoice,
    workload: WorkloadChoice,
    cluster: ClusterChoice,
    start: Annotated[
        float,
        typer.Option(
            "--start",
            help="First rate tried (req/s), from 1/64 to 4096: a search takes about 7 trials "
            "from 1 req/s, at most 25 from anywhere.",
        ),
    ] = 1.0,
    predictor: PredictorOpt = None,
    strict: StrictOpt = None,
    plugin: PluginOpt = None,
    workers: WorkersOpt = None,
    ray: RayOpt = None,
    out: OutOpt = Path("results/capacity"),
) -> None:
    """Find each policy's capacity: the highest Poisson rate with ≥99% SLO attainment, steady.

    Each trial counts -n requests that arrive after a warm-up (40 shortest TTFT SLOs of
    arrivals at the rate), with arrivals going on until every counted deadline has passed, so
    that no trial passes on an empty engine or a free drain (--whole: count every request of
    a finite trial instead). With a --trace, the rate tried rescales the trace's recorded
    arrival times to that mean rate (see --trace); a trace without times arrives as a Poisson
    process at the rate.

    The search brackets the rate, then bisects until the lowest failing rate is within 2.5%
    (the search precision) of the highest passing one. Writes results.json, timings.json
    (each trial's wall-clock and CPU figures), capacity.csv and capacity.png under OUT.

    With --replicas or --router, each policy runs on every replica of a cluster behind each
    router (--router 'all' compares them), the rate is the cluster's, and the shares divide
    by the limit of N replicas: N times one replica's bound.
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
    clusters = cluster.clusters(chosen)
    if not MIN_RATE <= start <= MAX_RATE:
        raise CliError(
            f"--start={start:g} must be between {MIN_RATE:g} and {MAX_RATE:g} req/s, the rates a "
            "search explores"
        )
    writable_folder(out)
    checked = run_spec(
        chosen[0], hardware, workload, strict, predictor=predictor, cluster=clusters[0]
    )
    base, seeds = checked.spec, workload.seeds
    bases = [
        attrs.evolve(base.with_policy(p).with_cluster(c), seed=base.seed + j)
        for p in chosen
        for c in clusters
        for j in range(seeds)
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
    replicas = cluster.replicas
    write_results(
        out / "results.json", results_document(base, found, limit, replicas), command_line(context)
    )
    write_csv(out / "capacity.csv", capacity_rows(found))
    spread = spreads(found)
    n = base.workload.requests
    trial = f"{n} requests per trial, {seeds} seed{'s' if seeds > 1 else ''}"
    name = checked.hardware.name
    machines = name if replicas == 1 else f"{replicas} replicas of {name}"
    title = f"capacity on {base.workload.label}, {machines}, {trial}"
    if can_plot():
        from slidingpolicy.figures.plots import plot_capacity

        shown = {s.policy: list(s.capacities) for s in spread if s.bounded}
        plot_capacity(shown, out / "capacity.png", title)
    console.print(capacity_table(found, spread, seeds, title))
    for line in [trials_line(base), *unbounded_lines(spread), *drain_lines(found, ran)]:
        console.print(line)
    for line in bound_lines(spread, limit, replicas):
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


def results_document(
    base: RunSpec, found: Sequence[CapacityResult], limit: FluidBound | None, replicas: int
) -> dict[str, Any]:
    """results.json's content: the base run, each capacity, the bound and, on a cluster, the
    limit of its replicas."""
    from slidingpolicy.bound.limits import replicas_limit

    document: dict[str, Any] = {
        "base": base.to_dict(),
        "capacity": [c.to_dict() for c in found],
        "bound": None if limit is None else limit.to_dict(),
    }
    if replicas > 1:
        document["replicas"] = replicas
        whole = None if limit is None else replicas_limit(limit.bound, replicas)
        document["replicas_limit"] = whole
    return document


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
        if not s.bounded:
            extra = "—"
        trials = str(sum(len(c.trials) for c in mine))
        table.add_row(escape(s.policy), capacity_text(s, 3), extra, trials)
    return table


def drain_lines(found: Sequence[CapacityResult], ran: Sequence[RunSummary]) -> list[str]:
    """A line for each policy whose trial at its capacity was too short to stand for the long
    run (`runs.drain`): the seed's with the largest drain."""
    from slidingpolicy.runs.drain import drain_note

    at_capacity: dict[str, RunSummary] = {}
    for c in found:
        for r in ran:
            if (r.spec.label, r.spec.seed, r.spec.rate) == (c.policy, c.seed, c.capacity):
                known = at_capacity.get(c.policy)
                if known is None or r.metrics.drain_share > known.metrics.drain_share:
                    at_capacity[c.policy] = r
    notes = (
        drain_note(f"{escape(p)} at {r.spec.rate:g} req/s (seed {r.spec.seed})", r.metrics)
        for p, r in at_capacity.items()
    )
    return [n for n in notes if n is not None]


def trials_line(base: RunSpec) -> str:
    """What the trials count (`workloads.steady_state.trials_text`)."""
    from slidingpolicy.workloads.steady_state import trials_text

    return trials_text(base.workload.build(base.arrivals, base.seed))


def unbounded_lines(spread: Sequence[CapacitySpread]) -> list[str]:
    """What a capacity of `UNBOUNDED` means, once, when a row shows one."""
    from slidingpolicy.runs.capacity_search import UNBOUNDED_NOTE

    return [UNBOUNDED_NOTE] if any(not s.bounded for s in spread) else []


def capacity_text(spread: CapacitySpread, digits: int) -> str:
    """The mean capacity, or `UNBOUNDED` where a seed's search passed at its cap."""
    from slidingpolicy.runs.capacity_search import UNBOUNDED

    return fmt(spread.mean, digits) if spread.bounded else UNBOUNDED


def ranked(spread: Sequence[CapacitySpread]) -> list[CapacitySpread]:
    """The policies by mean capacity, highest first; those not bounded by their trials after
    them, unranked (in the order given)."""
    return sorted((s for s in spread if s.bounded), key=lambda s: -s.mean) + [
        s for s in spread if not s.bounded
    ]


def shares_line(spread: Sequence[CapacitySpread], bound: float, of: str = "of the bound") -> str:
    """Each policy's mean capacity as a share of `bound` (`of` names it), highest first (none
    for a capacity its trials did not bound)."""
    from slidingpolicy.bound.limits import share

    return f"{of}: " + ", ".join(
        f"{escape(s.policy)} {pct(share(s.mean, bound)) if s.bounded else 'not bounded'}"
        for s in ranked(spread)
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


def bound_lines(
    spread: Sequence[CapacitySpread], limit: FluidBound | None, replicas: int = 1
) -> list[str]:
    """The shares, and what they divide by (or why there is no bound); for `replicas` > 1,
    the limit of that many replicas (`bound.limits.replicas_limit`)."""
    from slidingpolicy.bound.limits import replicas_limit

    if limit is None:
        return [
            "bound: none for a step trace's hardware model (the bound reads the roofline-based "
            "models; proofs/bound.md)"
        ]
    lines = [
        f"bound: {fmt(limit.bound, 3)} req/s, the highest Poisson rate at which 99% of requests "
        f"could meet their SLOs on this hardware in the long run, whatever the policy (binding: "
        f"{', '.join(limit.binding)}; `slidingpolicy bound` explains it)",
    ]
    if replicas == 1:
        return [shares_line(spread, limit.bound), *lines]
    whole = replicas_limit(limit.bound, replicas)
    return [
        shares_line(spread, whole, f"of the limit of {replicas} replicas"),
        f"limit of {replicas} replicas: {fmt(whole, 3)} req/s, {replicas} × one replica's "
        "bound, whatever the policies and the router (the replicas share nothing)",
        *lines,
    ]
