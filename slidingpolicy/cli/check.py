"""`slidingpolicy check`: a recorded run's plans checked against the invariants.

It reads a (state, plan) log or a step trace, whose lines carry the batch that ran and its
latency too (docs/checker.md, `slidingpolicy.codec`, `slidingpolicy.step_trace`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from slidingpolicy.cli.options import (
    EXIT_BAD_INPUT,
    CliError,
)
from slidingpolicy.cli.output import console
from slidingpolicy.errors import SlidingPolicyError

EXIT_BROKEN = 1
LOG_FORMAT = (
    'expected JSONL, one {"state": ..., "plan": ... | null, "token_budget": int | null} per '
    'line, with "scheduled", "fallback" and "latency" in a step trace (docs/checker.md)'
)


def check(
    log: Annotated[
        Path,
        typer.Argument(
            metavar="LOG",
            help="JSONL log of (state, plan) pairs, or a step trace, from any engine.",
        ),
    ],
    predictor: Annotated[
        Path | None,
        typer.Option(
            "--predictor",
            help="Recompute T̂ with this predictor JSON (from `slidingpolicy fit --out`).",
            rich_help_panel="Predictor",
        ),
    ] = None,
    gpu: Annotated[
        str | None,
        typer.Option(
            "--hardware",
            help="Recompute T̂ with this GPU's packaged predictor (rtx3090, a100-80g, h100).",
            rich_help_panel="Predictor",
        ),
    ] = None,
    model: Annotated[
        str,
        typer.Option(
            "--model",
            help="Model, with --hardware: qwen2.5-7b or llama3-8b.",
            rich_help_panel="Predictor",
        ),
    ] = "qwen2.5-7b",
    tp: Annotated[
        int,
        typer.Option(
            "--tp",
            min=1,
            help="Tensor-parallel GPUs, with --hardware.",
            rich_help_panel="Predictor",
        ),
    ] = 2,
    margin: Annotated[
        float | None,
        typer.Option(
            "--margin",
            min=1.0,
            max=10.0,
            help="Check every plan against this latency margin m (invariants 6-7 compare T̂·m "
            "with deadlines) instead of the margin each plan records it was priced with "
            "(1.0 in logs written before plans recorded one).",
        ),
    ] = None,
) -> None:
    """Check every plan of a recorded run against the invariants; report, never crash.

    Invariants 6 and 7 compare the plan's predicted latency with deadlines: give --predictor
    or --hardware/--model/--tp to recompute it from the batch instead of trusting the log.
    A step with no plan (the engine scheduled it itself; its "fallback" says why) is counted,
    not checked. Exit 0 when every plan holds, 1 when some break an invariant, 2 when the log
    has malformed lines (or none at all), 3 when it has both.
    """
    from slidingpolicy._parse import MAX_JSON_LINE, lines
    from slidingpolicy.invariants import check_plan
    from slidingpolicy.step_trace import parse_step

    judge = _predictor(predictor, gpu, model, tp)
    plans = broken = malformed = unbudgeted = unplanned = 0
    for number, line in lines(log, CliError, LOG_FORMAT, MAX_JSON_LINE, limit=None):
        if not line.strip():
            continue
        try:
            step = parse_step(line)
        except SlidingPolicyError as error:
            malformed += 1
            print(f"{log}:{number}: malformed: {error}", file=sys.stderr)
            continue
        state, plan, budget = step.state, step.plan, step.token_budget
        if plan is None:
            unplanned += 1
            continue
        plans += 1
        unbudgeted += budget is None
        violations = check_plan(state, plan, token_budget=budget, predictor=judge, margin=margin)
        if violations:
            broken += 1
            for v in violations:
                print(f"{log}:{number}: t={state.now:.6f}s {v}")
    if plans == 0 and malformed == 0 and unplanned == 0:
        raise CliError(f"{log}: no plans to check (the log is empty); {LOG_FORMAT}")
    console.print(
        f"{plans} plans checked: {broken} break an invariant, {malformed} malformed lines"
    )
    if unplanned:
        console.print(f"{unplanned} steps without a plan (scheduled by the engine itself)")
    if unbudgeted:
        console.print(
            f"[yellow]{unbudgeted} plans have token_budget null: invariant 4 not checked[/yellow]"
        )
    if judge is None:
        console.print(
            "invariants 6-7 used each plan's own predicted_latency; pass --predictor or "
            "--hardware to recompute it"
        )
    code = (EXIT_BROKEN if broken else 0) | (EXIT_BAD_INPUT if malformed else 0)
    if code:
        raise typer.Exit(code)


def _predictor(path: Path | None, gpu: str | None, model: str, tp: int) -> Any:
    """The predictor to recompute T̂ with: a file, a built-in hardware's default, or None."""
    if path is not None and gpu is not None:
        raise CliError("give --predictor or --hardware, not both")
    if path is not None:
        from slidingpolicy.pricing import LatencyPredictor

        return LatencyPredictor.load(path)
    if gpu is None:
        return None
    from slidingpolicy.runs.specs import HardwareSpec

    spec = HardwareSpec(gpu, model, tp)
    spec.build()
    return spec.predictor()
