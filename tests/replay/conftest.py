"""Fixtures of the replay suite: a fake engine on 127.0.0.1, stopped after the test."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.replay.fake_engine import Behaviour, FakeEngine

Start = Callable[[Callable[[dict[str, Any]], Behaviour]], FakeEngine]


@pytest.fixture
def fake_engine() -> Iterator[Start]:
    """Start fake engines answering as `behave` says; all stopped at the end of the test."""
    started: list[FakeEngine] = []

    def start(behave: Callable[[dict[str, Any]], Behaviour]) -> FakeEngine:
        engine = FakeEngine(behave).start()
        started.append(engine)
        return engine

    yield start
    for engine in started:
        engine.stop()
