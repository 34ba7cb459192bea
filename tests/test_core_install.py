"""The core install: a policy plans, observes and refits, and the engine simulates, with only
the core dependencies of pyproject.toml importable; the console script then names its extra.

The subprocess sees the standard library, this repository and links to the core distributions
(and what they require) alone, so an import of typer, rich, matplotlib, Ray or cvxpy anywhere
on these paths fails it. CI also runs scripts/core_example.py in an empty virtual environment
holding only the built wheel and its dependencies (.ci/run).
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

EXAMPLE = ROOT / "scripts" / "core_example.py"


def _requirement_names(dist: str) -> list[str]:
    """The distributions `dist` requires unconditionally (no extra, no environment marker)."""
    found = []
    for line in metadata.requires(dist) or []:
        if ";" in line:
            continue
        found.append(re.split(r"[^A-Za-z0-9._-]", line)[0])
    return found


def _core_closure() -> set[str]:
    """The core dependencies of pyproject.toml and, recursively, what they require."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    todo = [re.split(r"[^A-Za-z0-9._-]", d)[0] for d in project["dependencies"]]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name.lower() not in seen:
            seen.add(name.lower())
            todo.extend(_requirement_names(name))
    return seen


def _link_core(into: Path) -> None:
    """Link every top-level file and folder of the core distributions into `into`."""
    for name in _core_closure():
        dist = metadata.distribution(name)
        tops = {Path(str(f)).parts[0] for f in dist.files or []}
        for top in tops:
            source = Path(str(dist.locate_file(top)))
            if top != ".." and source.exists() and not (into / top).exists():
                (into / top).symlink_to(source)


def _core_python(tmp_path: Path, code: str, *args: str) -> subprocess.CompletedProcess[str]:
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    _link_core(site)
    # -S: no site-packages on the path, only the standard library; then the core before it
    prelude = f"import sys; sys.path[:0] = {[str(ROOT), str(site)]!r}\n"
    return subprocess.run(
        [sys.executable, "-S", "-c", prelude + code, *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_a_policy_and_the_engine_run_on_the_core_dependencies_alone(tmp_path: Path) -> None:
    code = f"import runpy; runpy.run_path({str(EXAMPLE)!r}, run_name='__main__')"
    done = _core_python(tmp_path, code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "core ok"


def test_the_console_script_without_the_cli_extra_names_it_in_one_line(tmp_path: Path) -> None:
    code = "from slidingpolicy.cli import main; main(sys.argv[1:])"
    done = _core_python(tmp_path, code, "demo")
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == (
        "slidingpolicy: error: the command line needs typer and rich, from the cli extra: "
        "pip install 'slidingpolicy[cli]'\n"
    )


def test_the_test_kit_without_hypothesis_names_its_extra_in_one_line(tmp_path: Path) -> None:
    code = (
        "import slidingpolicy.testing as kit\n"
        "try:\n"
        "    kit.check_policy\n"
        "except ModuleNotFoundError as error:\n"
        "    print(error.name, error, sep='|')\n"
    )
    done = _core_python(tmp_path, code)
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        "hypothesis|slidingpolicy.testing needs hypothesis, from the testing extra: "
        "pip install 'slidingpolicy[testing]'\n"
    )
