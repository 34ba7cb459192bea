"""Test kits, shipped with the library.

For a policy: the library's own properties for yours, hypothesis strategies for requests,
queues and states (`testing.strategies`), and `check_policy`, which holds a policy to the plan
invariants, determinism, purity and its declared token budget on random states, then through
a short simulated run with every plan checked (`testing.policy_check`). It needs hypothesis,
from the testing extra: ``pip install 'slidingpolicy[testing]'``.

For an engine binding: faults to hold it to (`faults`), an engine in memory (`fake_engine`),
and the conformance suite every binding passes (`conformance`, given a `harness`; the fake
engine's in `fake_harness`). The suite runs under pytest.

The names below are imported on first use, so that importing this package needs nothing.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from slidingpolicy.testing.conformance import ConformanceSuite
    from slidingpolicy.testing.fake_engine import FakeEngine
    from slidingpolicy.testing.faults import Faulty, Poisoned
    from slidingpolicy.testing.harness import (
        Finished,
        Harness,
        Job,
        Prepare,
        Run,
        Served,
        Trial,
    )
    from slidingpolicy.testing.policy_check import (
        PolicyCheckError,
        Property,
        check_decisions,
        check_policy,
        check_run,
        check_step,
    )

_EXPORTS = {
    **dict.fromkeys(
        (
            "PolicyCheckError",
            "Property",
            "check_decisions",
            "check_policy",
            "check_run",
            "check_step",
        ),
        "policy_check",
    ),
    "ConformanceSuite": "conformance",
    "FakeEngine": "fake_engine",
    "Faulty": "faults",
    "Poisoned": "faults",
    **dict.fromkeys(("Finished", "Harness", "Job", "Prepare", "Run", "Served", "Trial"), "harness"),
}
"""The module that defines each name."""

__all__ = [
    "ConformanceSuite",
    "FakeEngine",
    "Faulty",
    "Finished",
    "Harness",
    "Job",
    "Poisoned",
    "PolicyCheckError",
    "Prepare",
    "Property",
    "Run",
    "Served",
    "Trial",
    "check_decisions",
    "check_policy",
    "check_run",
    "check_step",
]


def __getattr__(name: str) -> Any:
    """The kits' names, from the module that defines each, imported on first use."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
