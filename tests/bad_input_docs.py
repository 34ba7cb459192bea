"""Reading docs/bad-input.md's tables, for the bad-input tests."""

from __future__ import annotations

from pathlib import Path


def documented_rows(page: Path) -> dict[str, str]:
    """The rows of the tables of `page` (docs/bad-input.md), by their first cell."""
    rows = {}
    for line in page.read_text().splitlines():
        if line.startswith("| "):
            name = line.split(" | ")[0].removeprefix("| ")
            rows[name] = line.replace("\\|", "|")
    return rows
