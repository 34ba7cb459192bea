"""`slidingpolicy`: run scheduling policies on LLM serving workloads and compare them.

This module builds the typer app from the command modules beside it and holds `main`, the
console script. Bad arguments print one line on stderr and exit with code 2, never a traceback;
Ctrl-C prints "interrupted" and exits with code 130, SIGTERM "terminated" and 143, each after
removing temporary files and stopping workers (`signals`). Bare `slidingpolicy` prints the
help.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Annotated, NoReturn, TextIO

import typer

from slidingpolicy.cli.bound import bound
from slidingpolicy.cli.calibrate import fit, profile
from slidingpolicy.cli.capacity import capacity
from slidingpolicy.cli.check import check
from slidingpolicy.cli.demo import demo
from slidingpolicy.cli.explain import explain_command
from slidingpolicy.cli.fidelity import replay_fidelity
from slidingpolicy.cli.options import EXIT_BAD_INPUT, EXIT_INTERRUPTED
from slidingpolicy.cli.output import ARGV, console
from slidingpolicy.cli.plain import PlainCommand, PlainGroup
from slidingpolicy.cli.policies import policies
from slidingpolicy.cli.replay import replay
from slidingpolicy.cli.reproduce import reproduce
from slidingpolicy.cli.routers import routers
from slidingpolicy.cli.signals import Stopped, stopping_on_signals
from slidingpolicy.cli.simulate import simulate
from slidingpolicy.cli.sweep import sweep_command
from slidingpolicy.errors import SlidingPolicyError, SlidingPolicyWarning

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
    rich_markup_mode="rich",
    cls=PlainGroup,
)
"""The app; its help and every command's print as written (`cli.plain`)."""


def version_callback(show: bool) -> None:
    """Print the package's version and stop."""
    if show:
        from slidingpolicy import __version__

        console.print(f"slidingpolicy {__version__}")
        raise typer.Exit(0)


@app.callback()
def options(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=version_callback,
            is_eager=True,
            metavar=" ",
            help="Print the version and exit.",
        ),
    ] = False,
) -> None:
    """Simulate SLO-aware LLM scheduling policies (SlidingServe and its baselines)."""


app.command(cls=PlainCommand)(demo)
app.command(cls=PlainCommand)(simulate)
app.command(cls=PlainCommand)(capacity)
app.command(cls=PlainCommand)(bound)
app.command(name="sweep", cls=PlainCommand)(sweep_command)
app.command(cls=PlainCommand)(reproduce)
app.command(cls=PlainCommand)(replay)
app.command(name="replay-fidelity", cls=PlainCommand)(replay_fidelity)
app.command(cls=PlainCommand)(profile)
app.command(cls=PlainCommand)(fit)
app.command(cls=PlainCommand)(check)
app.command(name="explain", cls=PlainCommand)(explain_command)
app.command(cls=PlainCommand)(policies)
app.command(cls=PlainCommand)(routers)


def _fail(message: str) -> NoReturn:
    print(f"slidingpolicy: error: {' '.join(message.split())}", file=sys.stderr)
    sys.exit(EXIT_BAD_INPUT)


@contextmanager
def one_line_warnings() -> Iterator[None]:
    """The package's own warnings as one line on stderr, like its errors; others as Python
    shows them."""
    with warnings.catch_warnings():
        shown = warnings.showwarning

        def show(
            message: Warning | str,
            category: type[Warning],
            filename: str,
            lineno: int,
            file: TextIO | None = None,
            line: str | None = None,
        ) -> None:
            if issubclass(category, SlidingPolicyWarning):
                print(f"slidingpolicy: warning: {' '.join(str(message).split())}", file=sys.stderr)
            else:
                shown(message, category, filename, lineno, file, line)

        warnings.showwarning = show
        yield


def main(argv: Sequence[str] | None = None) -> None:
    """Run the CLI; bad input → one line on stderr and exit code 2; Ctrl-C → exit code 130,
    SIGTERM → 143."""
    command = typer.main.get_command(app)
    args = list(sys.argv[1:] if argv is None else argv)
    if not args:
        args = ["--help"]
    try:
        with (
            one_line_warnings(),
            stopping_on_signals(),
            command.make_context("slidingpolicy", list(args)) as context,
        ):
            context.meta[ARGV] = ["slidingpolicy", *args]
            command.invoke(context)
    except typer.Exit as done:
        sys.exit(done.exit_code)
    except Stopped as stopped:
        print(f"slidingpolicy: {stopped.word}", file=sys.stderr)
        sys.exit(stopped.code)
    except (KeyboardInterrupt, typer.Abort):
        print("slidingpolicy: interrupted", file=sys.stderr)
        sys.exit(EXIT_INTERRUPTED)
    except SlidingPolicyError as error:
        _fail(str(error))
    except typer.TyperException as error:
        _fail(error.format_message())
    except OSError as error:
        _fail(str(error))
    sys.exit(0)
