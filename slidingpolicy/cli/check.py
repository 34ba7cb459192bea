"""`slidingpolicy check`: a recorded run's plans checked against the invariants."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from slidingpolicy.cli.options import EXIT_BAD_INPUT, CliError
from slidingpolicy.cli.output import console
from slidingpolicy.errors import SlidingPolicyError


def check(
    log: Annotated[Path, typer.Argument(help="JSONL log of (state, plan) pairs, from any engine.")],
) -> None:
    """Check every plan of a recorded run against the invariants; report, never crash.

    Exit 0 when all plans hold, 1 when some break an invariant, 2 on malformed lines.
    """
    from slidingpolicy.codec import parse_line
    from slidingpolicy.invariants import check_plan

    if not log.is_file():
        raise CliError(f"{log}: no such log file")
    plans = broken = malformed = 0
    with log.open() as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                state, plan, budget = parse_line(line)
            except SlidingPolicyError as error:
                malformed += 1
                print(f"{log}:{number}: malformed: {error}", file=sys.stderr)
                continue
            plans += 1
            violations = check_plan(state, plan, token_budget=budget)
            if violations:
                broken += 1
                for v in violations:
                    print(f"{log}:{number}: t={state.now:.6f}s {v}")
    console.print(
        f"{plans} plans checked: {broken} break an invariant, {malformed} malformed lines"
    )
    if malformed:
        raise typer.Exit(EXIT_BAD_INPUT)
    if broken:
        raise typer.Exit(1)
