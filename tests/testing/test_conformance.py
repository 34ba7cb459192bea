"""The conformance suite every binding passes, run on the fake engine (each binding runs it
on its own engine in its own tests)."""

from __future__ import annotations

import pytest

from slidingpolicy.testing import ConformanceSuite, Harness
from slidingpolicy.testing.fake_harness import FakeHarness


class TestConformance(ConformanceSuite):
    @pytest.fixture
    def harness(self) -> Harness:
        return FakeHarness()
