"""The package says who made it, under what licence, at what version, and how to cite it; and
every results file says which version, commit and command made it."""

from __future__ import annotations

import re
import subprocess
import tomllib
from pathlib import Path

import pytest

import slidingpolicy
from slidingpolicy.runs import provenance

ROOT = Path(__file__).resolve().parent.parent


def test_the_version_is_one_and_every_file_that_names_it_agrees() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "version" in project["dynamic"]
    citation = (ROOT / "CITATION.cff").read_text()
    assert f"\nversion: {slidingpolicy.__version__}\n" in citation
    released = re.findall(r"^## \[(\d[^\]]*)\]", (ROOT / "CHANGELOG.md").read_text(), re.M)
    assert released[0] == slidingpolicy.__version__


def test_the_licence_text_ships_and_the_metadata_names_it() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    text = (ROOT / "LICENSE").read_text()
    assert text.lstrip().startswith("Apache License\n")
    assert "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION" in text
    assert project["license"] == "Apache-2.0"
    assert project["license-files"] == ["LICENSE"]
    assert project["authors"] == [{"name": "slidingpolicy developers"}]


def test_the_citation_names_the_paper() -> None:
    citation = (ROOT / "CITATION.cff").read_text()
    assert "Beyond Greedy Chunking: SLO-Aware Sliding-Window Scheduling for LLM Inference" in (
        citation
    )
    assert "arXiv:2606.05933" in citation


def test_the_commit_is_this_work_trees_head() -> None:
    head = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    found = provenance.commit()
    assert found is not None
    assert found.removesuffix("-dirty") == head


def test_outside_a_git_tree_the_commit_is_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "__init__.py").write_text("")
    monkeypatch.setattr(provenance, "PACKAGE", tmp_path)
    assert provenance.commit() is None


def test_without_git_the_commit_is_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "")
    assert provenance.commit() is None
    assert provenance.provenance(["slidingpolicy", "demo"]) == {
        "version": slidingpolicy.__version__,
        "commit": None,
        "command": "slidingpolicy demo",
    }
