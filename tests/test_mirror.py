"""The tests mirror the package: each package of `slidingpolicy` has its folder under tests/
(named alike), and each folder of tests there names a package. The tests of a top-level module
(`codec.py`, `policy.py`, ...) and of the repository itself (README, docs, benches) sit at the
top of tests/."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def packages(root: Path) -> set[str]:
    """The subpackages of `slidingpolicy` under `root` (folders with an `__init__.py`)."""
    return {p.parent.name for p in (root / "slidingpolicy").glob("*/__init__.py")}


def folders_of_tests(root: Path) -> set[str]:
    """The folders of tests under `root`'s tests/ (those with an `__init__.py`)."""
    return {p.parent.name for p in (root / "tests").glob("*/__init__.py")}


def test_every_package_has_its_folder_of_tests_and_no_other_folder_is_there() -> None:
    assert folders_of_tests(ROOT) ^ packages(ROOT) == set()


def test_a_package_without_tests_and_a_stray_folder_are_both_seen(tmp_path: Path) -> None:
    for folder in ("slidingpolicy/records", "slidingpolicy/engine", "tests/records", "tests/core"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "__init__.py").touch()
    assert folders_of_tests(tmp_path) ^ packages(tmp_path) == {"engine", "core"}
