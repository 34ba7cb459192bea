"""The offline engine, across replicas: N replicas behind a router, each the engine's own
events (`engine.advance`) on the requests routed to it, in one order of time.

Events, earliest first: a report period's reports (ties first), an arrival (routed when it
arrives, before any replica's step at that time: a step admits what has arrived by its
start, as the single engine's does), an early notice (a request finished at its arrival), or
a replica's next step. A replica's decode-only run ends at the next event that could route a
request to it: the next arrival or report, and, where a request given up is routed once
more, any other replica's next step. With a report period and no retries, a router's
decisions until the next report depend on nothing a replica does, so the arrivals of a period
are routed at its start (each as at its arrival: the same reports, ledger and time), and a
replica's decode-only run ends only at its own next arrival or the next report. All replicas
write one token log and share one count of the counted requests left, so the run ends, and
is measured, as a single run is (`engine.simulator`): one replica behind round robin is the
single engine, step for step (tests/cluster/test_single.py).
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from slidingpolicy.cluster.cluster_output import ClusterOutput, ClusterStats, merged
from slidingpolicy.cluster.replica import Replica
from slidingpolicy.cluster.reports import Fresh, periodic
from slidingpolicy.cluster.routed_table import RoutedTable
from slidingpolicy.cluster.spec import ClusterSpec
from slidingpolicy.engine.advance import Event
from slidingpolicy.engine.bookkeeping import Counted, RunParts
from slidingpolicy.engine.noise import Normals, engine_rng
from slidingpolicy.engine.run_types import EngineOptions, RunOutput
from slidingpolicy.engine.trusted import trusted_request
from slidingpolicy.errors import InvalidRecordError
from slidingpolicy.hardware import HardwareModel
from slidingpolicy.metrics import TokenLog, outcome, summarize
from slidingpolicy.pricing import LatencyPredictor
from slidingpolicy.records.request import Request
from slidingpolicy.routing import Ledger, ReplicaReport
from slidingpolicy.workloads import Workload


def replica_names(count: int) -> list[str]:
    """The replicas' ids, in order as routers order them: replica-0 ... (zero-padded)."""
    width = len(str(count - 1))
    return [f"replica-{k:0{width}d}" for k in range(count)]


def simulate_cluster(
    policies: Sequence[Any],
    workload: Workload,
    hardware: HardwareModel,
    seed: int,
    cluster: ClusterSpec,
    predictor: LatencyPredictor,
    options: EngineOptions | None = None,
    progress: Callable[[int], None] | None = None,
) -> ClusterOutput:
    """Run one policy per replica (`policies`, one each, N of them) on `workload` behind
    `cluster`'s router over `hardware`; replica k's noise from `engine_rng(seed, k)`, the
    router's draws from `seed`. `predictor` is what a replica reports with when its policy
    learns none; `progress` is told each counted request as it finishes (at steps)."""
    return _Cluster(policies, workload, hardware, seed, cluster, predictor, options, progress).run()


class _Cluster:
    """One cluster run (module docstring)."""

    def __init__(
        self,
        policies: Sequence[Any],
        workload: Workload,
        hardware: HardwareModel,
        seed: int,
        cluster: ClusterSpec,
        predictor: LatencyPredictor,
        options: EngineOptions | None,
        progress: Callable[[int], None] | None = None,
    ) -> None:
        if len(policies) != cluster.replicas:
            raise InvalidRecordError(
                "cluster", "policies", f"gives {len(policies)} for {cluster.replicas} replicas"
            )
        self.options = options or EngineOptions()
        self.seed = seed
        self.columns = columns = workload.columns()
        window = workload.window
        self.log = TokenLog(columns, None if window is None else window.indices)
        self.counted = Counted(len(workload.counted))
        self.horizon = math.inf if window is None else window.horizon
        ids = [r.id for r in workload.requests]
        self.replicas = [
            self._replica(k, name, policy, hardware, ids, predictor)
            for k, (name, policy) in enumerate(
                zip(replica_names(cluster.replicas), policies, strict=True)
            )
        ]
        self.index = {replica.name: k for k, replica in enumerate(self.replicas)}
        self.router = cluster.build()
        self.ledger = Ledger(seed)
        self.period = cluster.report_period
        self.reroute = cluster.reroute
        self.ids = ids
        self.arrival: list[float] = columns.arrival.tolist()
        self.prompt: list[int] = columns.prompt.tolist()
        self.ttft: list[float] = columns.ttft.tolist()
        self.tbt: list[float] = columns.tbt.tolist()
        self.next_arrival = 0
        self.heap: list[tuple[float, int]] = []
        self.busy = [False] * cluster.replicas
        self.tick = 0.0 if self.period > 0.0 else math.inf
        self.held: dict[str, ReplicaReport] = {}
        self.retried: set[int] = set()
        self.ahead = self.period > 0.0 and not self.reroute
        """Whether a period's arrivals are routed at its start (module docstring)."""
        self.unserved: list[tuple[float, int]] = []
        """Requests to finish unserved (an early notice, a retry late everywhere), by when."""
        self.routed = [0] * cluster.replicas
        self.notices = 0
        self._next_miss_check = 0
        self.progress = progress
        self._reported = 0

    def _replica(
        self,
        k: int,
        name: str,
        policy: Any,
        hardware: HardwareModel,
        ids: list[str],
        predictor: LatencyPredictor,
    ) -> Replica:
        """Replica k, named `name`: its own table of the requests routed to it and its own
        noise (`engine_rng(seed, k)`), the cluster's token log and count."""
        parts = RunParts(
            self.log,
            self.counted,
            self.horizon,
            RoutedTable(ids, self.columns, self.log),
            Normals(engine_rng(self.seed, k)),
        )
        return Replica(name, policy, hardware, self.options, parts, predictor, self._given_up)

    def run(self) -> ClusterOutput:
        """Process the events in order of time until every counted request has finished, or
        every counted deadline has passed, or the miss budget is spent."""
        started = time.perf_counter()
        end, stopped = 0.0, False
        while self.counted.left:
            arrival = self._arrival_time()
            notice = self.unserved[0][0] if self.unserved else math.inf
            step = self.heap[0][0] if self.heap else math.inf
            if min(arrival, notice, step) == math.inf:
                break
            if self.tick <= min(arrival, notice, step):
                self._report(self.tick)
                continue
            if arrival <= min(notice, step):
                self._route_arrival()
                continue
            if notice <= step:
                self._finish_unserved(*heapq.heappop(self.unserved))
                continue
            now, k = heapq.heappop(self.heap)
            end = now
            if now > self.horizon:
                break
            if self._over_miss_budget(now):
                stopped = True
                break
            replica = self.replicas[k]
            replica.table.bound = self._bound(arrival)
            event = replica.event()
            end = replica.now
            pending = replica.table.pending
            if event is Event.STEPPED:
                self._tell_progress()
            if event is Event.RAN or event is Event.STEPPED:
                heapq.heappush(self.heap, (replica.now, k))
            elif pending:
                replica.now = max(replica.now, replica.table.arrival[pending[0]])
                heapq.heappush(self.heap, (replica.now, k))
            else:
                self.busy[k] = False
        return self._output(end, stopped, time.perf_counter() - started)

    def _tell_progress(self) -> None:
        """Tell `progress` the counted requests finished since it was last told."""
        done = self.counted.total - self.counted.left
        if self.progress is not None and done > self._reported:
            self.progress(done - self._reported)
            self._reported = done

    def _arrival_time(self) -> float:
        """When the next request of the workload arrives (inf when all have)."""
        k = self.next_arrival
        return self.arrival[k] if k < len(self.arrival) else math.inf

    def _bound(self, arrival: float) -> float:
        """Where a replica's decode-only run ends: the next arrival or report, and with
        retries, any other replica's next step (where a request may be given up)."""
        bound = min(arrival, self.tick)
        if self.reroute and self.heap:
            bound = min(bound, self.heap[0][0])
        return bound

    def _report(self, at: float) -> None:
        """The replicas report (every `period` seconds); the ledger keeps what came after;
        routed ahead, the arrivals until the next report are routed now."""
        self.held = periodic(self.replicas, at)
        self.ledger = self.ledger.with_reports(self.held)
        self.tick = at + self.period
        while self.ahead and self._arrival_time() < self.tick:
            self._route_arrival()

    def _reports(self, at: float, left_out: Replica | None) -> Mapping[str, ReplicaReport]:
        """The reports a router reads at `at`: held since the last period, or fresh."""
        if self.period > 0.0:
            if left_out is None:
                return self.held
            return {name: r for name, r in self.held.items() if name != left_out.name}
        fresh = Fresh(self.replicas, at, left_out)
        self.ledger = self.ledger.with_reports(fresh)
        return fresh

    def _route_arrival(self) -> None:
        """Route the next request of the workload, as it arrives."""
        i = self.next_arrival
        self.next_arrival += 1
        at = self.arrival[i]
        request = trusted_request(self.ids[i], at, self.prompt[i], 0, 0, self.ttft[i], self.tbt[i])
        self._send(i, request, at, None)

    def _send(self, i: int, request: Request, at: float, giver: Replica | None) -> None:
        """Route request i (as `request`) at `at`, away from `giver` when it is a retry: to a
        replica, or, on a notice or a retry predicted late everywhere, finished unserved."""
        route = self.router.route(request, self._reports(at, giver), self.ledger, at)
        retry = giver is not None
        late = retry and route.predicted is not None and route.predicted > request.deadline
        if route.replica is None or late:
            self.ledger = self.ledger.decided()
            self.notices += route.replica is None
            heapq.heappush(self.unserved, (at, i))
            return
        self.ledger = self.ledger.sent_to(route.replica, request, at)
        k = self.index[route.replica]
        replica = self.replicas[k]
        replica.receive(i, at, retry)
        self.routed[k] += 1
        if not self.busy[k]:
            replica.now = max(replica.now, at)
            heapq.heappush(self.heap, (replica.now, k))
            self.busy[k] = True

    def _finish_unserved(self, at: float, i: int) -> None:
        """Request i ends at `at` unserved: no replica takes it."""
        self.log.give_up(i, at)
        self.counted.left -= self.log.counted[i]

    def _given_up(self, i: int, replica: Replica) -> bool:
        """A replica gives request i up: route it once more if the cluster reroutes and it
        was not routed again before (True: the cluster took it)."""
        if not self.reroute or i in self.retried or len(self.replicas) == 1:
            return False
        self.retried.add(i)
        self._send(i, replica.retry_of(i, replica.now), replica.now, replica)
        return True

    def _over_miss_budget(self, now: float) -> bool:
        """Whether more requests than `miss_budget` have certainly missed, on every replica
        (checked every 32 iterations of them all, as a single run checks its own)."""
        budget = self.options.miss_budget
        if budget is None:
            return False
        iterations = sum(r.tally.iterations for r in self.replicas)
        if iterations < self._next_miss_check:
            return False
        self._next_miss_check = iterations + 32
        log = self.log
        passed = sum(r._due_passed(now) for r in self.replicas)
        return log.late_count + log.given_up_unlate + passed > budget

    def _output(self, end: float, stopped: bool, wall: float) -> ClusterOutput:
        """The run's output over every replica, and the router's figures."""
        log = self.log
        waiting = []
        if end > self.horizon:
            waiting = [
                i
                for r in self.replicas
                for i in r.table.live
                if log.counted[i] and log.counts[i] == 0
            ]
        tally = merged([r.tally for r in self.replicas])
        metrics = summarize(log, end, tally.iterations, tally.errors(), waiting)
        stalled = any(r.table.live for r in self.replicas) and not stopped and end <= self.horizon
        output = RunOutput(
            metrics,
            outcome(log),
            end,
            stalled and self.counted.left > 0,
            tally.stats(wall),
            stopped,
            sum(r.kv.used_blocks for r in self.replicas),
            tuple(r.pstate for r in self.replicas),
        )
        retries = len(self.retried)
        return ClusterOutput(output, ClusterStats(tuple(self.routed), self.notices, retries))
