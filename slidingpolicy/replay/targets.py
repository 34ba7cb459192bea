"""Where each arm's requests go: a server already running at a URL, or one this replay
launched and holds, with what it costs while it waits (memory, CPU time when idle).

A launched server is started (or restarted, when servers are not kept between runs), waited
for, probed and warmed up by `ready`; `measuring` wraps each run, checking that the server is
still alive and keeping the idle time between runs apart from the busy time.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from slidingpolicy.errors import EngineError
from slidingpolicy.replay.client import probe, warm
from slidingpolicy.replay.launcher import Server, Usage


class Target:
    """One arm's endpoint: `url`, serving `model` (None: the first it lists), and the
    `server` process behind it when this replay launched it."""

    def __init__(self, label: str, url: str, model: str | None, server: Server | None) -> None:
        self.label, self.url, self.model, self.server = label, url, model, server
        self.starts = 0
        self.idle_wall = 0.0
        self.idle_cpu = 0.0
        self.memory_peak = 0
        self._mark: tuple[float, float] | None = None

    def ready(self, timeout: float, warmup: int, request_timeout: float) -> None:
        """Start the server if it is not running, wait until it answers, find the model to
        ask for, and send the warm-up requests."""
        if self.server is not None and not self.server.alive():
            self.server.start()
            self.starts += 1
            self.server.wait_ready(timeout)
        self.model = asyncio.run(probe(self.url, self.model))
        asyncio.run(warm(self.url, self.model, warmup, request_timeout))
        self._mark = self._now()

    def _now(self) -> tuple[float, float]:
        """The wall clock and the server's CPU seconds, sampling its memory."""
        usage = self._usage()
        if usage is None:
            return time.monotonic(), math.nan
        self.memory_peak = max(self.memory_peak, usage.memory)
        return time.monotonic(), usage.cpu

    def _usage(self) -> Usage | None:
        return None if self.server is None else self.server.usage()

    @contextmanager
    def measuring(self) -> Iterator[str]:
        """Hold the block as one run against this target (yields the model to ask for)."""
        if self.server is not None and not self.server.alive():
            raise EngineError(f"server {self.label!r} is no longer running; see {self.server.log}")
        if self._mark is not None:
            wall, cpu = self._now()
            self.idle_wall += wall - self._mark[0]
            self.idle_cpu += cpu - self._mark[1]
        if self.model is None:
            raise EngineError(f"server {self.label!r} was not made ready")
        yield self.model
        self._mark = self._now()

    def stop(self) -> None:
        """Stop the launched server, if any, and forget where its idle clock stood."""
        if self.server is not None:
            self.server.stop()
        self._mark = None

    def to_dict(self) -> dict[str, Any]:
        """The target as results record it: where it was, how it was started, what it cost."""
        server = self.server
        share = self.idle_cpu / self.idle_wall if self.idle_wall > 0 else math.nan
        return {
            "arm": self.label,
            "url": self.url,
            "model": self.model,
            "command": None if server is None else list(server.command),
            "log": None if server is None else str(server.log),
            "starts": self.starts,
            "ready_seconds": None if server is None else server.ready_after,
            "memory_peak_bytes": self.memory_peak if server is not None else None,
            "idle_seconds": self.idle_wall,
            "idle_cpu_share": share,
        }
