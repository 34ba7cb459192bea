"""Reading docs/bad-input.md's tables, for the bad-input tests, and what their cases share."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from slidingpolicy.policies import plugin_loader, registry


def documented_rows(page: Path) -> dict[str, str]:
    """The rows of the tables of `page` (docs/bad-input.md), by their first cell."""
    rows = {}
    for line in page.read_text().splitlines():
        if line.startswith("| "):
            name = line.split(" | ")[0].removeprefix("| ")
            rows[name] = line.replace("\\|", "|")
    return rows


@contextmanager
def own_registry() -> Iterator[None]:
    """The policy registry and the plugins loaded as they are, restored after: a case that
    loads a plugin registers nothing the next case sees."""
    policies, plugins = dict(registry._REGISTRY), set(plugin_loader._LOADED)
    try:
        yield
    finally:
        registry._REGISTRY.clear()
        registry._REGISTRY.update(policies)
        plugin_loader._LOADED.clear()
        plugin_loader._LOADED.update(plugins)
