"""No product file over 400 lines: a module holds one concept."""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "slidingpolicy"
LIMIT = 400


def _long_files(package: Path) -> list[str]:
    """'path (lines)' of every Python file under `package` longer than LIMIT lines."""
    counted = ((path, len(path.read_text().splitlines())) for path in package.rglob("*.py"))
    return sorted(
        f"{path.relative_to(package.parent)} ({lines} lines)"
        for path, lines in counted
        if lines > LIMIT
    )


def test_no_product_file_over_400_lines() -> None:
    found = _long_files(PACKAGE)
    assert not found, found


def test_a_long_file_is_seen(tmp_path: Path) -> None:
    package = tmp_path / "package"
    (package / "inner").mkdir(parents=True)
    (package / "short.py").write_text("x = 0\n" * LIMIT)
    (package / "inner" / "long.py").write_text("x = 0\n" * (LIMIT + 1))
    assert _long_files(package) == [f"package/inner/long.py ({LIMIT + 1} lines)"]
