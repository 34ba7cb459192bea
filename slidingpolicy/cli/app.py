"""`slidingpolicy`: run scheduling policies on LLM serving workloads and compare them.

This module builds the typer app from the command modules beside it and holds `main`, the
console script. Bad arguments print one line on stderr and exit with code 2, never a traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import typer

from slidingpolicy.cli.calibrate import fit, profile
from slidingpolicy.cli.capacity import capacity
from slidingpolicy.cli.check import check
from slidingpolicy.cli.demo import demo
from slidingpolicy.cli.options import EXIT_BAD_INPUT
from slidingpolicy.cli.output import console
from slidingpolicy.cli.simulate import simulate
from slidingpolicy.cli.sweep import sweep_command
from slidingpolicy.errors import SlidingPolicyError

app = typer.Typer(
    name="slidingpolicy",
    help=(
        "Simulate SLO-aware LLM scheduling policies (SlidingServe and its baselines) on "
        "realistic workloads over a model of real GPUs, and measure SLO attainment and "
        "capacity (the highest request rate at which 99% of requests meet their SLO).\n\n"
        "Start with `slidingpolicy demo`."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def policies() -> None:
    """List the registered policies."""
    from slidingpolicy.policies import names

    for name in names():
        console.print(name)


app.command()(demo)
app.command()(simulate)
app.command()(capacity)
app.command(name="sweep")(sweep_command)
app.command()(profile)
app.command()(fit)
app.command()(check)
app.command()(policies)


def main(argv: Sequence[str] | None = None) -> None:
    """Run the CLI; bad input → one line on stderr and exit code 2."""
    command = typer.main.get_command(app)
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        code = command.main(args=args, prog_name="slidingpolicy", standalone_mode=False)
    except typer.Exit as done:
        sys.exit(done.exit_code)
    except typer.Abort:
        print("slidingpolicy: aborted", file=sys.stderr)
        sys.exit(130)
    except SlidingPolicyError as error:
        print(f"slidingpolicy: error: {error}", file=sys.stderr)
        sys.exit(EXIT_BAD_INPUT)
    except typer.TyperException as error:
        format_message = getattr(error, "format_message", None)
        message = format_message() if callable(format_message) else str(error)
        print(f"slidingpolicy: error: {' '.join(str(message).split())}", file=sys.stderr)
        sys.exit(EXIT_BAD_INPUT)
    except OSError as error:
        print(f"slidingpolicy: error: {error}", file=sys.stderr)
        sys.exit(EXIT_BAD_INPUT)
    sys.exit(code if isinstance(code, int) else 0)
