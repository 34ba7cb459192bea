"""Where trials run never changes their results: a local Ray instance gives what the local
process pool gives, Ray's tasks stop when the caller does, and asking for Ray without it
installed says how to install it."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from types import ModuleType

import attrs
import pytest

from slidingpolicy.errors import InvalidRecordError, RayUnavailableError
from slidingpolicy.runs.capacity_search import capacities
from slidingpolicy.runs.specs import RunSpec, RunSummary, WorkloadSpec, run_many, sweep
from slidingpolicy.runs.workers import trial_runner

BASE = RunSpec("sarathi", workload=WorkloadSpec(requests=60))


@pytest.fixture(scope="module")
def ray_address() -> Iterator[str]:
    """The GCS address of a local two-CPU Ray instance, shut down after the module.

    The instance is kept small and to itself: a 100 MiB object store (the results are a few
    kB), and no memory monitor, which otherwise kills a worker whenever the whole machine
    (other jobs included) runs above 95% of its memory, and retries its task without end."""
    ray = pytest.importorskip("ray", reason="Ray is an optional extra: slidingpolicy[ray]")
    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setenv("RAY_memory_monitor_refresh_ms", "0")
    ray.init(
        num_cpus=2,
        object_store_memory=100 * 2**20,
        include_dashboard=False,
        log_to_driver=False,
    )
    monkeypatch.undo()
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()


def _ray() -> ModuleType:
    import ray

    return ray


def _dicts(runs: list[RunSummary]) -> list[object]:
    return [r.to_dict() for r in runs]


@pytest.mark.slow
def test_run_many_on_ray_equals_the_local_pool(ray_address: str) -> None:
    specs = [
        attrs.evolve(BASE.with_policy(p).with_rate(rate), seed=seed)
        for p in ("sarathi", "slidingserve")
        for rate, seed in ((0.8, 0), (2.5, 1))
    ]
    told: list[RunSummary] = []
    on_ray = run_many(specs, on_done=told.append, ray=ray_address)
    assert _dicts(on_ray) == _dicts(run_many(specs, workers=2))
    assert sorted(map(id, told)) == sorted(map(id, on_ray)), "on_done is told each result"
    assert _ray().is_initialized(), "a connection it did not open is left open"


def test_sweep_on_ray_equals_the_local_pool(ray_address: str) -> None:
    policies, rates = ["sarathi-edf", "qoserve"], [1.0, 3.0]
    on_ray = sweep(BASE, policies, rates, ray="auto")
    assert _dicts(on_ray) == _dicts(sweep(BASE, policies, rates, workers=2))


@pytest.mark.slow
def test_capacities_on_ray_equal_the_local_pool(ray_address: str) -> None:
    bases = [BASE, attrs.evolve(BASE.with_policy("slidingserve"), seed=1)]
    on_ray = capacities(bases, ray=ray_address)
    assert [c.to_dict() for c in on_ray] == [c.to_dict() for c in capacities(bases, workers=2)]


def _sleep(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


def test_an_interrupted_map_cancels_its_ray_tasks(ray_address: str) -> None:
    """Ctrl-C while trials run (here raised by on_done) frees every CPU the tasks held, queued
    and running alike, well before they would have finished."""
    ray = _ray()

    def interrupt(_: float) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt), trial_runner(ray=ray_address) as runner:
        runner.map(_sleep, [0.0, 60.0, 60.0, 60.0], on_done=interrupt)
    deadline = time.monotonic() + 20.0
    while ray.available_resources().get("CPU", 0.0) < 2.0:
        assert time.monotonic() < deadline, f"tasks still hold CPUs: {ray.available_resources()}"
        time.sleep(0.2)


def test_a_second_cluster_is_refused_while_connected(ray_address: str) -> None:
    with pytest.raises(RayUnavailableError, match="already connected"):
        run_many([BASE], ray="127.0.0.1:1")


def test_workers_and_ray_are_not_given_together() -> None:
    with pytest.raises(InvalidRecordError, match="give one or the other"):
        run_many([BASE], workers=2, ray="auto")


def test_ray_missing_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(RayUnavailableError, match=r"pip install 'slidingpolicy\[ray\]'"):
        capacities([BASE], ray="auto")
