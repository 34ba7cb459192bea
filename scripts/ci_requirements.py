"""The requirements of one of CI's adapter environments, one per line, for `pip install -r`;
with --key, a short hash of them that names the cached environment instead.

    python3 scripts/ci_requirements.py transformers 5.23.0 [--key]

transformers: the core with the extras its tests and the replay CLI use (cli, plots, replay),
the adapter's own requirements (itself and the core are installed editable, apart) with
transformers pinned to the series under test, setuptools for those editable installs, and the
CPU build of torch that lies on the CI machine's disk (a plain `torch` would download a CUDA
build of several GB).
"""

from __future__ import annotations

import argparse
import hashlib
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CPU_TORCH = "torch==2.13.0"


def _project(path: Path) -> Any:
    """The `[project]` table of a pyproject.toml."""
    return tomllib.loads(path.read_text())["project"]


def transformers(version: str) -> list[str]:
    """The transformers adapter's environment, at transformers `version`."""
    core = _project(ROOT / "pyproject.toml")
    adapter = _project(ROOT / "adapters" / "transformers" / "pyproject.toml")
    core_extras, extras = core["optional-dependencies"], adapter["optional-dependencies"]
    installed_apart = ("slidingpolicy", "transformers", "torch")
    own = [r for r in adapter["dependencies"] if not r.startswith(installed_apart)]
    return sorted(
        {
            *core["dependencies"],
            *core_extras["cli"],
            *core_extras["plots"],
            "aiohttp>=3.9",
            *own,
            *extras["serve"],
            *extras["test"],
            f"transformers=={version}",
            CPU_TORCH,
            "setuptools",
        }
    )


def main() -> None:
    """Print the requirements (or their key)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("environment", choices=["transformers"])
    parser.add_argument("version")
    parser.add_argument("--key", action="store_true")
    arguments = parser.parse_args()
    requirements = transformers(arguments.version)
    if arguments.key:
        print(hashlib.sha256("\n".join(requirements).encode()).hexdigest()[:16])
    else:
        print("\n".join(requirements))


if __name__ == "__main__":
    main()
