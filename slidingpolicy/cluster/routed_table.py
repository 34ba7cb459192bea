"""A replica's requests: the run's table (`engine.table`), holding only what was routed here.

Every replica's table has a row for each request of the workload (the token log all
replicas share is indexed the same way), but admits only the requests routed to it, in the
order they were routed (their arrival order: a router sends each request when it arrives).
A request given up elsewhere and routed here once more is a retry: it arrives when it was
given up, to recompute what it had produced (as after a preemption, `RequestTable.
recompute`), with the same SLOs from its new arrival.
"""

from __future__ import annotations

import math
from collections import deque

from slidingpolicy.engine.table import RequestTable
from slidingpolicy.metrics import TokenLog
from slidingpolicy.workloads import WorkloadColumns


class RoutedTable(RequestTable):
    """The requests routed to one replica (module docstring)."""

    def __init__(self, ids: list[str], columns: WorkloadColumns, log: TokenLog) -> None:
        super().__init__(ids, columns, log)
        self.pending: deque[int] = deque()
        """Requests routed here and not yet admitted, in arrival order."""
        self.bound = math.inf
        """When a request may next be routed here (the cluster's next event that could
        route one): with the next routed one, where a decode-only run ends."""

    def route(self, i: int, at: float, retry: bool = False) -> None:
        """Request i is routed here at `at`; a `retry` arrives then, anew (module doc)."""
        if retry:
            generated = self.log.counts[i]
            self.arrival[i] = at
            self.base[i] = generated
            self.prompt[i] = int(self.columns.prompt[i]) + generated
            self.admitted_ttft[i] = self.ttft[i] + generated * self.tbt[i]
        self.pending.append(i)

    def admit_arrivals(self, now: float) -> None:
        """Make live every request routed here that has arrived by `now`."""
        pending, arrival = self.pending, self.arrival
        admitted: list[int] = []
        while pending and arrival[pending[0]] <= now:
            i = pending.popleft()
            self.live[i] = None
            admitted.append(i)
        if admitted:
            self.not_decoding += len(admitted)
            self.refresh(admitted)

    def next_arrival_time(self) -> float:
        """When the next request routed here arrives, or one may next be routed here
        (`bound`), whichever comes first."""
        pending = self.pending
        return min(self.arrival[pending[0]], self.bound) if pending else self.bound
