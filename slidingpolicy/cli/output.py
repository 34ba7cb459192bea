"""What the commands show: the rich consoles, a progress bar, and number formats for tables."""

from __future__ import annotations

import math
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from importlib.util import find_spec

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

console = Console()
err_console = Console(stderr=True)
PLOTS_EXTRA = "pip install 'slidingpolicy[plots]'"
"""The install command that brings matplotlib, for the PNG figures."""


ARGV = "slidingpolicy.argv"
"""The key under which `main` keeps the command line in the click context's `meta`."""


def command_line(context: typer.Context) -> list[str]:
    """The command line that runs the command of `context`, for the provenance of its results:
    as `main` received it, or this process's arguments when the app was invoked otherwise."""
    if ARGV in context.meta:
        return list(context.meta[ARGV])
    return ["slidingpolicy", *sys.argv[1:]]


def can_plot() -> bool:
    """True when matplotlib (the plots extra) is installed; otherwise say on stderr that the
    PNG figures are left out, and how to get them."""
    if find_spec("matplotlib") is not None:
        return True
    err_console.print(
        f"no PNG figures: they need matplotlib, from the plots extra: {PLOTS_EXTRA}",
        markup=False,
        highlight=False,
    )
    return False


class Ticker:
    """A progress bar's handle: `ticker(n)` advances it by n; `note(text)` shows what runs."""

    def __init__(self, bar: Progress, task: TaskID, label: str) -> None:
        self._bar, self._task, self._label = bar, task, label

    def __call__(self, n: int) -> None:
        self._bar.advance(self._task, n)

    def note(self, text: str) -> None:
        """Show `text` after the bar's label."""
        self._bar.update(self._task, description=f"{self._label}: {escape(text)}")


@contextmanager
def progress(label: str, total: int) -> Iterator[Ticker]:
    """A rich progress bar on stderr, gone when done; none when stderr is not a terminal."""
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    quiet = not err_console.is_terminal
    with Progress(*columns, console=err_console, transient=True, disable=quiet) as bar:
        yield Ticker(bar, bar.add_task(label, total=total), label)


def trying(trials: list[tuple[str, float]]) -> str:
    """The rates a capacity round tries, per policy ("slidingserve 1.2, 1.4/s"), or their range
    when that is too long for one line."""
    rates: dict[str, list[float]] = {}
    for policy, rate in trials:
        rates.setdefault(policy, []).append(rate)
    text = "trying " + "; ".join(
        f"{p} {', '.join(f'{r:.3g}' for r in rs)}/s" for p, rs in rates.items()
    )
    if len(text) <= 48:
        return text
    every = [rate for _, rate in trials]
    return f"trying {len(every)} rates, {min(every):.3g}–{max(every):.3g}/s"


def fmt(value: float | None, digits: int = 3) -> str:
    """`value` with `digits` decimals; a dash when it is missing, NaN or infinite."""
    if value is None or not math.isfinite(value):
        return "—"
    return f"{value:.{digits}f}"


def pct(value: float) -> str:
    """A fraction as a percentage with one decimal; a dash when it is NaN or infinite."""
    return f"{100 * value:.1f}%" if math.isfinite(value) else "—"


def number(value: float) -> str:
    """A value with three significant digits or more (12.3, 4.56, 123, 12345); a dash for
    NaN or infinity."""
    if not math.isfinite(value):
        return "—"
    size = abs(value)
    digits = 2 if size < 10 else 1 if size < 100 else 0
    return f"{value:.{digits}f}"


def durations(seconds: Sequence[float]) -> tuple[str, list[str]]:
    """Durations in the one unit that reads for all of them (`metrics.duration_unit`): the
    unit's name and each value in it."""
    from slidingpolicy.metrics import duration_unit

    unit, size = duration_unit(seconds)
    return unit, [number(value / size) for value in seconds]
