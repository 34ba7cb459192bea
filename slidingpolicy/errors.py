"""The error hierarchy: every bad input raises a subclass of `SlidingPolicyError`."""

from __future__ import annotations

from typing import Any


class SlidingPolicyError(ValueError):
    """Root of every error this package raises on bad input."""


class InvalidRecordError(SlidingPolicyError):
    """A record field holds a value the record cannot hold; the message names both."""

    def __init__(self, record: str, field: str, problem: str) -> None:
        joint = "" if problem.startswith("=") else " "
        super().__init__(f"{record}: {field}{joint}{problem}")
        self.record = record
        self.field = field
        self.problem = problem

    def __reduce__(self) -> tuple[Any, ...]:
        """Rebuilt from its fields, so that a worker process can hand it back."""
        return type(self), (self.record, self.field, self.problem)


class UnknownNameError(SlidingPolicyError):
    """A name (policy, hardware, model, workload) is unknown; the message lists the known ones."""

    def __init__(self, kind: str, name: str, known: list[str] | tuple[str, ...]) -> None:
        super().__init__(f"unknown {kind} {name!r}; known: {', '.join(sorted(known))}")
        self.kind = kind
        self.name = name
        self.known = tuple(sorted(known))

    def __reduce__(self) -> tuple[Any, ...]:
        """Rebuilt from its fields, so that a worker process can hand it back."""
        return type(self), (self.kind, self.name, self.known)


class PredictorFormatError(SlidingPolicyError):
    """A saved predictor is malformed or of another format version."""


class TraceFormatError(SlidingPolicyError):
    """A trace file is malformed; the message gives file:line and the accepted formats."""


class PolicyLabelError(SlidingPolicyError):
    """A policy label that is not ``name`` or ``name[key=value,...]``."""


class RayUnavailableError(SlidingPolicyError):
    """Trials were asked to run on Ray, which is not installed or not reachable at the address
    given; the message says which, and how to install the extra."""


class EngineError(SlidingPolicyError):
    """A serving engine that cannot be reached, does not start, or answers a request with an
    error; the message names the engine's address or command and what went wrong."""


class SlidingPolicyWarning(UserWarning):
    """Root of the warnings this package gives; the command line prints each as one line."""


class ProfileEnvelopeWarning(SlidingPolicyWarning):
    """A profile's last grid points lie below an earlier one: time past the grid grows from
    the monotone envelope, not from the last point."""
