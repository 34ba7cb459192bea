"""The conformance suite every binding passes (`slidingpolicy.testing.conformance`), on
transformers' continuous batching with the tiny model: requests added at their arrival times
and read as they come out, clients that leave cancelled; its server cases on `python -m
slidingpolicy_transformers serve`."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY, generate_latest
from slidingpolicy import InvalidRecordError
from slidingpolicy.replay.launcher import Server, free_port
from slidingpolicy.testing import ConformanceSuite, Finished, Harness, Job, Run, Served, Trial

from slidingpolicy_transformers import Binding, SlidingScheduler
from slidingpolicy_transformers.engine import Engine, EngineSettings
from slidingpolicy_transformers.server import BadRequestError, parse_completion

TIMEOUT = 120.0
"""Seconds a run may take: a bound against a hang, not a timing."""


class NoManager:
    """A manager that takes every request (the door is what is tested)."""

    output_router = None

    def add_request(self, input_ids: list[int], request_id: str, **kwargs: Any) -> str:
        return request_id


class TransformersHarness:
    """Runs the suite's jobs through the engine with the tiny model."""

    def __init__(self, model_dir: Path, tmp_path: Path) -> None:
        self.model_dir, self.tmp_path = model_dir, tmp_path

    def run(self, trial: Trial) -> Run:
        adapter = {k: v for k, v in trial.config.items() if k != "policy"}
        policy = trial.config.get("policy", "slidingserve")
        settings = EngineSettings(self.model_dir, policy, adapter, num_blocks=256,
                                  max_batch_tokens=trial.engine_budget)  # fmt: skip
        engine = Engine(settings)
        assert engine.binding is not None
        prepare = trial.prepare
        if prepare is not None:
            engine.binding.watchers.append(lambda s: prepare(s.sliding))
        finished = self._drive(engine, trial.jobs)
        scheduler = engine.binding.scheduler
        assert isinstance(scheduler, SlidingScheduler)
        return Run(finished, scheduler.sliding, trial.engine_budget or engine.binding.token_budget)

    def _drive(self, engine: Engine, jobs: Sequence[Job]) -> dict[str, Finished]:
        """Add the jobs at their arrival times and read every output until each has ended."""
        engine.start()
        ended: dict[str, Finished] = {}
        tokens: dict[str, int] = {}
        try:
            begin = time.monotonic()
            order = sorted(range(len(jobs)), key=lambda i: jobs[i].arrive)
            while len(ended) < len(jobs) and time.monotonic() - begin < TIMEOUT:
                while order and begin + jobs[order[0]].arrive <= time.monotonic():
                    i = order.pop(0)
                    prompt = [3 + (7 * i + k) % 500 for k in range(jobs[i].prompt)]
                    engine.add(f"r{i}", prompt, jobs[i].output, dict(jobs[i].slo))
                output = engine.manager.get_result(timeout=0.05)
                if output is None:
                    continue
                rid = output.request_id
                tokens[rid] = len(output.generated_tokens)
                leave = jobs[int(rid[1:])].leave_after
                if output.is_finished():
                    ended[rid] = Finished(tokens[rid], output.error)
                elif leave is not None and tokens[rid] >= leave and rid not in ended:
                    engine.cancel(rid)
                    ended[rid] = Finished(tokens[rid], None, cancelled=True)
            assert len(ended) == len(jobs), f"not finished in {TIMEOUT} s: {ended}"
            time.sleep(0.2)  # the cancelled ones are cleared at the next steps
            return ended
        finally:
            engine.stop()

    def admit(self, slo: object) -> Sequence[str | None]:
        """The server's door (`server.parse_completion`) and the binding's (`add_request`)."""
        verdicts: list[str | None] = []
        body = {"prompt": [1], "max_tokens": 1, "vllm_xargs": slo}
        binding, manager = Binding({"policy": "sarathi"}), NoManager()
        for door in (lambda: parse_completion(body, 10),
                     lambda: binding.add_request(manager, [1], "admitted", slo=slo)):  # fmt: skip
            try:
                door()
                verdicts.append(None)
            except (BadRequestError, InvalidRecordError) as error:
                verdicts.append(str(error))
        return verdicts

    def metrics(self) -> str:
        return generate_latest(REGISTRY).decode()

    def serve(self, config: Mapping[str, Any]) -> contextlib.AbstractContextManager[Served]:
        return self._serve(config)

    @contextlib.contextmanager
    def _serve(self, config: Mapping[str, Any]) -> Iterator[Served]:
        port = free_port()
        adapter = json.dumps({k: v for k, v in config.items() if k != "policy"})
        command = [sys.executable, "-m", "slidingpolicy_transformers", "serve",
                   str(self.model_dir), "--arm", config["policy"], "--port", str(port),
                   "--served-model-name", "tiny", "--num-blocks", "256",
                   "--adapter-config", adapter]  # fmt: skip
        log = self.tmp_path / "server.log"
        env = {**os.environ, "HF_HUB_OFFLINE": "1"}
        server = Server("tiny", command, env, log, f"http://127.0.0.1:{port}")
        server.start()
        try:
            server.wait_ready(300.0)
            yield Served(server.url, "tiny", log)
        finally:
            server.stop()


class TestConformance(ConformanceSuite):
    @pytest.fixture
    def harness(self, model_dir: Path, tmp_path: Path) -> Harness:
        return TransformersHarness(model_dir, tmp_path)
