"""Hypothesis, which the kit is built on: an extra (``pip install 'slidingpolicy[testing]'``),
named in one line when it is missing."""

from __future__ import annotations

NEEDS = (
    "slidingpolicy.testing needs hypothesis, from the testing extra: "
    "pip install 'slidingpolicy[testing]'"
)

try:
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import strategies as st
except ModuleNotFoundError as missing:
    raise ModuleNotFoundError(NEEDS, name="hypothesis") from missing

__all__ = ["HealthCheck", "Phase", "given", "settings", "st"]
