"""The conformance suite's harness for the fake engine (`fake_engine.FakeEngine`): jobs are
added when the engine's clock reaches their arrival, clients leave after the tokens they
asked to read, and the metrics are prometheus_client's default registry."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any

from prometheus_client import REGISTRY, generate_latest

from slidingpolicy.embedding.prometheus import MetricsFeed
from slidingpolicy.errors import InvalidRecordError
from slidingpolicy.testing.fake_engine import FakeEngine
from slidingpolicy.testing.harness import Finished, Run, Served, Trial

MAX_STEPS = 100_000
"""A bound against a run that never ends."""


class FakeHarness:
    """Runs the suite's jobs through a `FakeEngine`."""

    def run(self, trial: Trial) -> Run:
        jobs = trial.jobs
        engine = FakeEngine(
            trial.config, metrics=MetricsFeed(), max_batch_tokens=trial.engine_budget
        )
        if trial.prepare is not None:
            trial.prepare(engine.loop)
        order = sorted(range(len(jobs)), key=lambda i: jobs[i].arrive)
        cancelled: set[str] = set()
        for _ in range(MAX_STEPS):
            while order and jobs[order[0]].arrive <= engine.time:
                i = order.pop(0)
                engine.add(f"r{i}", jobs[i].prompt, jobs[i].output, jobs[i].slo)
            if engine.idle() and not order:
                break
            if engine.idle():
                engine.time = jobs[order[0]].arrive
                continue
            engine.step()
            for i, job in enumerate(jobs):
                found = engine.requests.get(f"r{i}")
                leave = job.leave_after
                if found and not found.done and leave is not None and found.generated >= leave:
                    engine.cancel(found.id)
                    cancelled.add(found.id)
        finished = {
            rid: Finished(r.generated, r.notice, rid in cancelled)
            for rid, r in engine.requests.items()
        }
        return Run(finished, engine.loop, engine.max_batch_tokens)

    def admit(self, slo: object) -> Sequence[str | None]:
        """The fake engine's one door, `add`."""
        try:
            FakeEngine({"policy": "sarathi"}).add("admitted", 8, 1, slo)
        except InvalidRecordError as error:
            return [str(error)]
        return [None]

    def metrics(self) -> str:
        return generate_latest(REGISTRY).decode()

    def serve(self, config: Mapping[str, Any]) -> AbstractContextManager[Served] | None:
        return None
