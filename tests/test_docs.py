"""Every Python example of the documentation site runs as written, and asserts what the page
says: a worked example that drifts from the code fails here.

The blocks of one page run in order in one namespace, so a page can build its example up
across its prose. A block may include a file with the snippets syntax the site renders
(`--8<-- "docs/snippets/scene.py"`). That every page is in the nav, and every link and
anchor resolves, is the strict build's job (`make docs`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
BLOCK = re.compile(r"^```(?:python|\{\.python[^}\n]*\})\n(.*?)^```", re.S | re.M)
PAGES = sorted(p for p in DOCS.rglob("*.md") if BLOCK.search(p.read_text()))
SNIPPET = re.compile(r'^-{2}8<-{2} "(.+)"$', re.M)


def python_blocks(page: Path) -> Iterator[tuple[str, str, bool]]:
    """The page's Python blocks in order (```python, or ```{.python title=...}, which ruff
    does not format: a snippet line is not Python), as (source, file name, whether it is a
    whole file). A block is preceded by blank lines so that a traceback names the page's own
    line numbers; a block that only includes a file runs as that file."""
    text = page.read_text()
    name = str(page.relative_to(ROOT))
    for match in BLOCK.finditer(text):
        body = match.group(1)
        whole = SNIPPET.fullmatch(body.strip())
        if whole:
            yield (ROOT / whole.group(1)).read_text(), whole.group(1), True
        else:
            padding = "\n" * text.count("\n", 0, match.start(1))
            included = SNIPPET.sub(lambda m: (ROOT / m.group(1)).read_text(), body)
            yield padding + included, name, False


def test_the_docs_have_examples() -> None:
    assert len(PAGES) >= 7, [p.name for p in PAGES]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(DOCS)))
def test_page_examples_run(page: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The page's blocks in order; a policy a page registers is forgotten after it. A whole
    file runs as a module, in a namespace of its own (two files may each define `NAME`), and
    the page's later blocks see what it defines."""
    from slidingpolicy.policies import registry

    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    namespace: dict[str, object] = {"__name__": f"docs.{page.stem}"}
    for source, name, whole in python_blocks(page):
        module: dict[str, object] = {"__name__": Path(name).stem} if whole else namespace
        exec(compile(source, name, "exec"), module)
        namespace.update({k: v for k, v in module.items() if not k.startswith("__")})


CITED = re.compile(r"\beq(?:s?\.|uations?) ?(\d+)(?:[–-](\d+))?")
STATED = re.compile(r"^\*\*\((\d+)\)", re.M)
SOURCES = [
    *DOCS.glob("*.md"),
    *(DOCS / "algorithms").glob("*.md"),
    ROOT / "README.md",
    *(ROOT / "slidingpolicy").rglob("*.py"),
]


def test_every_equation_cited_is_stated_on_the_equations_page() -> None:
    """The docs and the code cite equations by number; the equations page states each one,
    so no reader needs a source outside the repository and the paper."""
    stated = {int(n) for n in STATED.findall((DOCS / "algorithms" / "equations.md").read_text())}
    cited: dict[int, str] = {}
    for path in SOURCES:
        for first, last in CITED.findall(path.read_text()):
            for n in range(int(first), int(last or first) + 1):
                cited.setdefault(n, str(path.relative_to(ROOT)))
    missing = {n: where for n, where in cited.items() if n not in stated}
    assert not missing, f"equations cited but not stated: {missing}"


def test_nothing_cites_the_technical_note() -> None:
    """Readers have the paper, not the note a developer read it through."""
    for path in [*SOURCES, *(DOCS / "report").glob("*.md"), *(ROOT / "proofs").glob("*.md")]:
        text = path.read_text()
        for phrase in ("the note", "note's", "slidingserve-notes"):
            assert phrase not in text.lower(), f"{path.relative_to(ROOT)} cites {phrase!r}"
