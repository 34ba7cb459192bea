"""What the commands show: the rich consoles, a progress bar, and number formats for tables."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

console = Console()
err_console = Console(stderr=True)


@contextmanager
def progress(label: str, total: int) -> Iterator[Callable[[int], None]]:
    """A rich progress bar; yields `advance(n)`."""
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=err_console, transient=True) as bar:
        task = bar.add_task(label, total=total)
        yield lambda n: bar.advance(task, n)


def fmt(value: float | None, digits: int = 3) -> str:
    """`value` with `digits` decimals; a dash when it is missing or NaN."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{value:.{digits}f}"


def pct(value: float) -> str:
    """A fraction as a percentage with one decimal."""
    return f"{100 * value:.1f}%"


def ms(value: float) -> str:
    """Seconds as whole milliseconds; a dash for NaN."""
    return "—" if math.isnan(value) else f"{1000 * value:.0f}"
