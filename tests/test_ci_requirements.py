"""scripts/ci_requirements.py, as .ci/run calls it: each adapter environment's requirements,
and a key that changes with them and names the cached environment."""

from __future__ import annotations

import hashlib
import importlib.util
import subprocess
import sys
import tomllib
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "ci_requirements.py"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("ci_requirements", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _lines(*args: str) -> list[str]:
    done = _run(*args)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def _sha(requirements: list[str]) -> str:
    return hashlib.sha256("\n".join(requirements).encode()).hexdigest()[:16]


def _core_cli_plots() -> list[str]:
    core = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = core["optional-dependencies"]
    return [*core["dependencies"], *extras["cli"], *extras["plots"]]


def _vllm_extras() -> dict[str, list[str]]:
    adapter = tomllib.loads((ROOT / "adapters" / "vllm" / "pyproject.toml").read_text())
    extras: dict[str, list[str]] = adapter["project"]["optional-dependencies"]
    return extras


def test_the_vllm_cpu_environment_is_the_core_and_the_adapters_cpu_and_test_extras() -> None:
    extras = _vllm_extras()
    expected = [*_core_cli_plots(), *extras["cpu"], *extras["test"], "setuptools"]
    assert _lines("vllm-cpu") == expected


def test_the_vllm_cpu_key_hashes_its_requirements_sorted_without_setuptools() -> None:
    requirements = [r for r in _lines("vllm-cpu") if r != "setuptools"]
    assert _lines("vllm-cpu", "--key") == [_sha(sorted(requirements))]


def test_the_vllm_wheel_key_hashes_the_core_and_the_pinned_vllm_sorted() -> None:
    expected = sorted([*_core_cli_plots(), *_vllm_extras()["test"], "vllm==0.33.0"])
    assert _lines("vllm-wheel", "0.33.0", "--key") == [_sha(expected)]
    assert _lines("vllm-wheel", "0.34.0", "--key") != [_sha(expected)]


def test_the_vllm_wheel_keeps_vllms_own_requirements_less_extras_and_gpu_only_ones() -> None:
    installed = [
        "numpy>=1.26",
        "torch==2.14.0",
        "Flashinfer_Python>=0.3",
        "nvidia-cutlass-dsl>=4; platform_machine == 'x86_64'",
        'pytest; extra == "test"',
        "aiohttp",
    ]
    expected = ["numpy>=1.26", "aiohttp", *_core_cli_plots(), *_vllm_extras()["test"]]
    assert _script().vllm_wheel(installed) == [*expected, "setuptools"]


def test_the_vllm_wheel_requirements_need_that_vllm_installed() -> None:
    done = _run("vllm-wheel", "0.0.1")
    assert done.returncode != 0
    assert done.stdout == ""
    assert "vllm==0.0.1" in done.stderr


@pytest.mark.parametrize("version", ["5.17.0", "5.23.0"])
def test_the_transformers_key_hashes_its_requirements(version: str) -> None:
    requirements = _lines("transformers", version)
    assert f"transformers=={version}" in requirements
    assert requirements == sorted(requirements)
    assert _lines("transformers", version, "--key") == [_sha(requirements)]


def test_the_ray_environment_is_the_transformers_one_with_ray_serve_pinned() -> None:
    requirements = _lines("ray", "2.60.0")
    assert "ray[serve]==2.60.0" in requirements
    assert set(_lines("transformers", _script().RAY_TRANSFORMERS)) <= set(requirements)
    assert not any(r.startswith(("slidingpolicy", "ray[serve]>=")) for r in requirements)
    assert requirements == sorted(requirements)
    assert _lines("ray", "2.60.0", "--key") == [_sha(requirements)]
