"""The tiny instances of the clairvoyant comparison (fixed, so the gap table is stable)."""

from __future__ import annotations

from proofs.clairvoyant import Instance, Job, instance_of

B0 = 0.01
"""Seconds per non-empty iteration."""
B1 = 1e-4
"""Seconds per token (10 000 tokens/s)."""
ITERATIONS = 10
"""K: enough for every registered policy here (test_clairvoyant checks it)."""


def _job(i: int, arrival: float, prompt: int, output: int, ttft: float, tbt: float) -> Job:
    return Job(f"r{i}", arrival, prompt, output, ttft, tbt)


INSTANCES: tuple[Instance, ...] = (
    instance_of(
        "burst",
        [
            _job(0, 0.0, 1500, 2, 0.25, 0.05),
            _job(1, 0.0, 200, 3, 0.10, 0.05),
            _job(2, 0.01, 600, 2, 0.15, 0.05),
            _job(3, 0.02, 100, 3, 0.08, 0.04),
            _job(4, 0.03, 900, 1, 0.30, 0.05),
        ],
        B0,
        B1,
        ITERATIONS,
    ),
    instance_of(
        "long-first",
        [
            _job(0, 0.0, 3000, 2, 0.40, 0.05),
            _job(1, 0.02, 300, 2, 0.10, 0.03),
            _job(2, 0.04, 300, 2, 0.10, 0.03),
            _job(3, 0.06, 300, 2, 0.12, 0.03),
        ],
        B0,
        B1,
        ITERATIONS,
    ),
    instance_of(
        "tight-tbt",
        [
            _job(0, 0.0, 400, 4, 0.10, 0.03),
            _job(1, 0.0, 400, 4, 0.10, 0.03),
            _job(2, 0.05, 1200, 2, 0.20, 0.03),
            _job(3, 0.08, 200, 3, 0.10, 0.03),
            _job(4, 0.10, 800, 2, 0.20, 0.05),
        ],
        B0,
        B1,
        ITERATIONS,
    ),
    instance_of(
        "relaxed",
        [
            _job(0, 0.0, 800, 3, 1.0, 0.1),
            _job(1, 0.01, 400, 3, 1.0, 0.1),
            _job(2, 0.02, 1200, 2, 1.5, 0.1),
            _job(3, 0.05, 300, 3, 1.0, 0.1),
        ],
        B0,
        B1,
        ITERATIONS,
    ),
)
