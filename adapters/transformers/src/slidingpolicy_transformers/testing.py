"""Helpers for the adapter's tests and benchmarks: a tiny model shape and a driver that adds
requests to a running engine at their arrival times and collects what comes out."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
from slidingpolicy.replay.shapes import SHAPES

from slidingpolicy_transformers.engine import Engine

TINY_QWEN2 = dict(SHAPES["qwen2-tiny"])
"""A Qwen2 shape whose steps take a few milliseconds on a CPU."""


def tiny_model(folder: Path) -> Path:
    """A model folder holding only the tiny Qwen2 `config.json`."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(TINY_QWEN2))
    return folder


@attrs.frozen(slots=True)
class Job:
    """A request of `prompt` tokens asking `output` tokens, added `arrive` seconds after the
    first, with its SLO keys."""

    prompt: int
    output: int
    arrive: float = 0.0
    slo: dict[str, Any] = attrs.field(factory=dict)


def drive(engine: Engine, jobs: Sequence[Job], timeout: float = 120.0) -> dict[str, int]:
    """Start `engine`, add `jobs` at their arrival times, and return each request's output
    length once all are done (or `timeout` seconds passed); the engine is stopped after."""
    engine.start()
    try:
        begin = time.monotonic()
        for i, job in enumerate(sorted(jobs, key=lambda j: j.arrive)):
            time.sleep(max(0.0, begin + job.arrive - time.monotonic()))
            prompt = [3 + (7 * i + k) % 500 for k in range(job.prompt)]
            engine.add(f"r{i}", prompt, job.output, job.slo)
        done: dict[str, int] = {}
        while len(done) < len(jobs) and time.monotonic() - begin < timeout:
            output = engine.manager.get_result(timeout=1.0)
            if output is not None and output.is_finished():
                done[output.request_id] = len(output.generated_tokens)
        return done
    finally:
        engine.stop()
