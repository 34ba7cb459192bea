"""An adapter's start-up guard: the engine's version series it accepts, and the private hooks
of the engine's scheduler it relies on, each checked so that an engine change fails loudly."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Sequence


def version_series(version: str) -> tuple[int, int] | None:
    """(major, minor) of an engine's version string such as "0.32.0+cpu"; None if it has
    none. An adapter accepts the series it was tested on: engines' scheduler hooks are
    private and change between minor releases."""
    match = re.match(r"(\d+)\.(\d+)", version)
    return (int(match.group(1)), int(match.group(2))) if match else None


def check_series(
    adapter: str,
    engine: str,
    version: str,
    supported: Sequence[tuple[int, int]],
    error: Callable[[str], Exception],
) -> None:
    """Raise `error` unless `engine`'s `version` is of a `supported` series."""
    if version_series(version) not in supported:
        wanted = " or ".join(f"{major}.{minor}.x" for major, minor in supported)
        raise error(
            f"{adapter} supports {engine} {wanted}, found {version!r}: its scheduler hooks are "
            "private and change between minor releases"
        )


def check_hook(
    engine: str,
    owner: type,
    name: str,
    parameters: tuple[str, ...],
    error: Callable[[str], Exception],
) -> None:
    """Raise `error` unless the scheduler class `owner` (of `engine`, named with its version)
    has the method `name` with exactly `parameters`."""
    hook = getattr(owner, name, None)
    if hook is None:
        raise error(f"{engine}: Scheduler has no {name}()")
    found = tuple(inspect.signature(hook).parameters)
    if found != parameters:
        raise error(f"{engine}: Scheduler.{name}{found} is not {name}{parameters}")


def check_attributes(
    engine: str, scheduler: object, names: Sequence[str], error: Callable[[str], Exception]
) -> None:
    """Raise `error` if the built `scheduler` (of `engine`, named with its version) lacks an
    attribute of `names`, which the adapter reads or steers."""
    missing = [name for name in names if not hasattr(scheduler, name)]
    if missing:
        raise error(f"{engine}: Scheduler has no {missing}")
