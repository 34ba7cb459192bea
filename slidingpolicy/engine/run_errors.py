"""What stops a run: a plan the engine cannot run, or one that broke invariants (strict)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from slidingpolicy.errors import SlidingPolicyError
from slidingpolicy.invariants import Violation


class PlanViolationError(SlidingPolicyError):
    """A policy's plan broke invariants in strict mode; the message names policy and invariants."""

    def __init__(self, policy: str, now: float, violations: Sequence[Violation]) -> None:
        listed = "; ".join(str(v) for v in violations)
        super().__init__(f"policy {policy!r} at t={now:.6f}s broke {listed}")
        self.policy = policy
        self.now = now
        self.violations = tuple(violations)

    def __reduce__(self) -> tuple[Any, ...]:
        """Rebuilt from its fields, so that a worker process can hand it back."""
        return type(self), (self.policy, self.now, self.violations)


class EngineError(SlidingPolicyError):
    """A plan the engine cannot run (unknown id, more tokens than a request has left)."""
