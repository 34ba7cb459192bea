"""Every error with arguments of its own crosses a process boundary whole: a trial raises in a
worker process (`capacity`, `sweep`), and the pool hands the error back by pickling it. An
error that cannot be rebuilt from its pickle breaks the pool instead ("a process in the
process pool was terminated abruptly"), and the user never reads the message."""

from __future__ import annotations

import pickle

import pytest

from slidingpolicy.engine.run_errors import PlanViolationError
from slidingpolicy.errors import InvalidRecordError, UnknownNameError
from slidingpolicy.invariants import Violation
from slidingpolicy.testing.policy_check import PolicyCheckError, Property

ERRORS = [
    PlanViolationError("over-budget", 1.5, [Violation(4, "1024 tokens over a budget of 512")]),
    InvalidRecordError("Request", "prompt_tokens", "must be ≥ 1, got 0"),
    UnknownNameError("policy", "nope", ["fcfs", "edf"]),
    PolicyCheckError("least-slack", Property.DETERMINISM, "two plans differ"),
]


@pytest.mark.parametrize("error", ERRORS, ids=lambda e: type(e).__name__)
def test_an_error_survives_pickling_with_its_message_and_fields(error: Exception) -> None:
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is type(error)
    assert str(back) == str(error)
    assert vars(back) == vars(error)
