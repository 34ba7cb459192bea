"""`slidingpolicy reproduce`: the paper's figures and tables as a Markdown report."""

from __future__ import annotations

import time
from importlib.util import find_spec
from pathlib import Path
from typing import Annotated

import typer

from slidingpolicy.cli.options import CliError, RayOpt, WorkersOpt, writable_folder
from slidingpolicy.cli.output import PLOTS_EXTRA, command_line, console, progress


def reproduce(
    context: typer.Context,
    quick: Annotated[
        bool,
        typer.Option(
            "--quick/--full",
            metavar=" ",
            help="The quick preset (under 10 minutes on two cores) or the full one (under 60).",
        ),
    ] = False,
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Folder for the report, its figures and raw data.")
    ] = Path("results/reproduce"),
    workers: WorkersOpt = None,
    ray: RayOpt = None,
) -> None:
    """Regenerate every result the paper reports: capacity (Fig. 4), violations against load
    (Fig. 5), a transient overload (Fig. 6), the ablation (Table 4), predictor accuracy
    (Table 5), the scheduler's CPU cost and windows 1–4; a Markdown report with PNG figures,
    results.json (what the seeds determine) and timings.json, in OUT."""
    from slidingpolicy.reproduce import FULL, QUICK
    from slidingpolicy.reproduce import reproduce as run_all

    if find_spec("matplotlib") is None:
        raise CliError(f"the report's figures need matplotlib, from the plots extra: {PLOTS_EXTRA}")
    writable_folder(out)
    started = time.perf_counter()
    path = run_all(QUICK if quick else FULL, out, progress, workers, ray, command_line(context))
    console.print(f"report in {path} — {(time.perf_counter() - started) / 60:.1f} min")
