"""One replica of a cluster: the engine's events (`engine.advance`) on the requests routed to
it, its own KV cache, noise and policy state, and the report it makes of itself."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from slidingpolicy.cluster.routed_table import RoutedTable
from slidingpolicy.engine.advance import Advancing, Event
from slidingpolicy.engine.bookkeeping import RunParts
from slidingpolicy.engine.run_types import EngineOptions
from slidingpolicy.hardware import HardwareModel
from slidingpolicy.pricing import LatencyPredictor
from slidingpolicy.records.request import Request
from slidingpolicy.routing import ReplicaReport, report_from

GiveUp = Callable[[int, "Replica"], bool]
"""Told a request a replica gives up, and the replica; True when the cluster routes it once
more (the replica then only lets it go)."""


class Replica(Advancing):
    """A replica (module docstring). `version` counts what changed it (its events and the
    requests routed to it), so that a report made since still describes it."""

    table: RoutedTable

    def __init__(
        self,
        name: str,
        policy: Any,
        hardware: HardwareModel,
        options: EngineOptions,
        parts: RunParts,
        predictor: LatencyPredictor,
        on_give_up: GiveUp,
    ) -> None:
        super().__init__(policy, hardware, options, None, parts)
        self.name = name
        self.predictor = predictor
        self.on_give_up = on_give_up
        self.version = 0
        self._report: tuple[int, ReplicaReport] | None = None

    def event(self) -> Event:
        """The engine's event (`Advancing.event`), counted as a change."""
        self.version += 1
        return super().event()

    def receive(self, i: int, at: float, retry: bool) -> None:
        """Request i is routed here at `at` (a retry: given up elsewhere)."""
        self.version += 1
        self.table.route(i, at, retry)

    def _give_up(self, i: int) -> None:
        """Let request i go to the cluster, which routes it once more, or give it up here."""
        if self.on_give_up(i, self):
            self.kv.release(i)
            self.table.give_up(i)
        else:
            super()._give_up(i)

    def report(self, at: float) -> ReplicaReport:
        """Its report at `at`: of every request routed here by then, its next step at its
        clock (or `at`, idle), its prefill rate by the predictor its policy plans with now.
        Made anew only when something changed it since the last; else the last, made at."""
        cached = self._report
        if cached is not None and cached[0] == self.version:
            last = cached[1]
            if last.made_at == at:
                return last
            return attrs.evolve(last, made_at=at, free_at=max(self.now, at))
        table = self.table
        table.admit_arrivals(max(self.now, at))
        records = table.records
        decoding = [records[i] for i in table.decoding]
        queued = [r for i in table.live if (r := records[i]) is not None and not r.is_decoding]
        made = report_from(
            at,
            max(self.now, at),
            decoding,  # type: ignore[arg-type]
            queued,
            self.predictor_in_force(),
            self.budget,
        )
        self._report = (self.version, made)
        return made

    def predictor_in_force(self) -> LatencyPredictor:
        """The predictor the replica's policy plans with now: its learned one, where it
        learns online, else the one it was built on."""
        learned = getattr(self.pstate, "predictor", None)
        return learned if isinstance(learned, LatencyPredictor) else self.predictor

    def retry_of(self, i: int, at: float) -> Request:
        """Request i as a router sees it when it is given up here at `at` and sent again:
        arriving then, with its prompt and what it produced to recompute."""
        table = self.table
        generated = self.log.counts[i]
        return Request(
            table.ids[i],
            at,
            int(table.columns.prompt[i]) + generated,
            0,
            0,
            table.ttft[i] + generated * table.tbt[i],
            table.tbt[i],
        )
