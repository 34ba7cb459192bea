"""The run's requests: columns indexed by request (workload order), and which of them are live.

Python lists, as an iteration touches a handful of requests (lists are several times cheaper
than numpy there). The `Request` records a policy sees are built once per request and rebuilt
(`refresh`) only for the requests an iteration changed, with the engine's trusted constructor:
the table keeps its columns valid. Tokens produced are counted by the run's `TokenLog`, in the
original request's terms; after a recompute (module doc of `simulator`) a record counts them
from its current admission.

The live requests are kept as the snapshot needs them, updated as records change rather than
rebuilt: the decoding ones by index and, once many are live, the others in a `CandidateQueue`.
So an iteration costs what it changed, not what is live.
"""

from __future__ import annotations

import math
from bisect import insort

from slidingpolicy.engine.run_errors import EngineError
from slidingpolicy.engine.trusted import trusted_request
from slidingpolicy.metrics import TokenLog
from slidingpolicy.records.candidates import CandidateQueue
from slidingpolicy.records.plan import BatchPlan
from slidingpolicy.records.request import Request
from slidingpolicy.workloads import WorkloadColumns

QUEUE_FROM = 256
"""Live requests above which snapshots take the candidates from a kept `CandidateQueue`."""


class RequestTable:
    """Every request of a run: its columns, its record while live, and the arrivals to come."""

    def __init__(self, ids: list[str], columns: WorkloadColumns, log: TokenLog) -> None:
        n = len(ids)
        self.n = n
        self.columns = columns
        self.log = log
        self.ids = ids
        self.index = {rid: i for i, rid in enumerate(ids)}
        self.arrival: list[float] = columns.arrival.tolist()
        self.ttft: list[float] = columns.ttft.tolist()
        self.admitted_ttft = list(self.ttft)
        """The TTFT SLO of each request's current admission: L_ttft + g·L_tbt after a recompute
        of g tokens, so that its deadline stays eq. 1's deadline of token g + 1."""
        self.tbt: list[float] = columns.tbt.tolist()
        self.prompt: list[int] = columns.prompt.tolist()
        """The prompt of each request's current admission (plus the g tokens it recomputes)."""
        self.prefilled: list[int] = [0] * n
        self.base: list[int] = [0] * n
        """Tokens produced before the current admission (g after a recompute of g tokens)."""
        self.output_tokens: list[int] = columns.output.tolist()
        self.records: list[Request | None] = [None] * n
        self.live: dict[int, None] = {}
        """The live requests, in workload order (a dict, for removal in O(1))."""
        self.decoding: list[int] = []
        """The live requests whose prompt is cached, in workload order."""
        self.queue: CandidateQueue | None = None
        """The live requests whose prompt is not all cached, kept while the live requests
        are many (`keep_queue`)."""
        self.not_decoding = 0
        """Live requests whose prompt is not all cached."""
        self.next_arrival = 0
        """The index of the next request to arrive (n when all have)."""

    def refresh_decodes(self, indices: list[int]) -> None:
        """`refresh` of decoding requests that stay decoding (a decode-only run's)."""
        records, ids, arrival, prompt = self.records, self.ids, self.arrival, self.prompt
        prefilled, generated, base = self.prefilled, self.log.counts, self.base
        ttft, tbt, build = self.admitted_ttft, self.tbt, trusted_request
        for i in indices:
            records[i] = build(
                ids[i], arrival[i], prompt[i], prefilled[i], generated[i] - base[i], ttft[i], tbt[i]
            )

    def refresh(self, indices: list[int]) -> None:
        """(Re)build the records of live requests `indices` from the columns, in the terms of
        their current admission, and move them between the decodes and the queue."""
        records, ids, arrival, prompt = self.records, self.ids, self.arrival, self.prompt
        prefilled, generated, base = self.prefilled, self.log.counts, self.base
        ttft, tbt, build = self.admitted_ttft, self.tbt, trusted_request
        moved: list[tuple[int, Request | None, Request]] = []
        for i in indices:
            old = records[i]
            new = build(
                ids[i], arrival[i], prompt[i], prefilled[i], generated[i] - base[i], ttft[i], tbt[i]
            )
            records[i] = new
            if old is None or not (old.is_decoding and new.is_decoding):
                moved.append((i, old, new))
        if moved:
            self._move(moved)

    def _move(self, moved: list[tuple[int, Request | None, Request]]) -> None:
        """Keep the decodes and the queue in step with records that were (or are) not
        decoding: (index, old record or None, new record)."""
        leaving: list[str] = []
        joining: list[Request] = []
        for i, old, new in moved:
            was_decoding = old is not None and old.is_decoding
            if old is not None and not was_decoding:
                leaving.append(old.id)
            if not new.is_decoding:
                joining.append(new)
                if was_decoding:
                    self.decoding.remove(i)
            elif not was_decoding:
                insort(self.decoding, i)
        if self.queue is not None:
            self.queue = self.queue.replaced(leaving, joining)

    def keep_queue(self) -> CandidateQueue | None:
        """The queue of candidates while more than `QUEUE_FROM` requests are live (built when
        they first are, kept until fewer than half that are), else None: below that a
        snapshot lists the live requests, which costs less than keeping a queue."""
        if self.queue is None and len(self.live) > QUEUE_FROM:
            records = self.records
            waiting = [records[i] for i in self.live]
            self.queue = CandidateQueue().replaced(
                [],
                [r for r in waiting if r is not None and not r.is_decoding],
            )
        elif self.queue is not None and len(self.live) < QUEUE_FROM // 2:
            self.queue = None
        return self.queue

    def admit_arrivals(self, now: float) -> None:
        """Make live every request that has arrived by `now`."""
        arrival, n, first = self.arrival, self.n, self.next_arrival
        while self.next_arrival < n and arrival[self.next_arrival] <= now:
            self.live[self.next_arrival] = None
            self.next_arrival += 1
        if self.next_arrival > first:
            self.not_decoding += self.next_arrival - first
            self.refresh(list(range(first, self.next_arrival)))

    def next_arrival_time(self) -> float:
        """When the next request arrives (inf when every one has)."""
        return self.arrival[self.next_arrival] if self.next_arrival < self.n else math.inf

    def recompute(self, i: int) -> None:
        """Send request i back to wait, to recompute its prompt and the g tokens it produced."""
        generated = self.log.counts[i]
        if self.prefilled[i] == self.prompt[i]:
            self.not_decoding += 1
        self.base[i] = generated
        self.prompt[i] = int(self.columns.prompt[i]) + generated
        self.admitted_ttft[i] = self.ttft[i] + generated * self.tbt[i]
        self.prefilled[i] = 0
        self.refresh([i])

    def retire_and_refresh(self, indices: list[int], decodes: bool = False) -> list[int]:
        """Retire the requests of `indices` that produced their last token and refresh the
        others' records (all decoding before and after, with `decodes`); returns the retired
        ones."""
        generated, output, records = self.log.counts, self.output_tokens, self.records
        going: list[int] = []
        done: list[int] = []
        leaving: list[str] = []
        for i in indices:
            if generated[i] == output[i]:
                old = records[i]
                if old is not None:
                    if old.is_decoding:
                        self.decoding.remove(i)
                    else:
                        leaving.append(old.id)
                records[i] = None
                del self.live[i]
                done.append(i)
            else:
                going.append(i)
        if leaving and self.queue is not None:
            self.queue = self.queue.replaced(leaving, [])
        if decodes:
            self.refresh_decodes(going)
        else:
            self.refresh(going)
        return done

    def give_up(self, i: int) -> None:
        """Finish live request i unserved: the policy gave it up (`BatchPlan.given_up`)."""
        old = self.records[i]
        if old is not None and old.is_decoding:
            self.decoding.remove(i)
        elif old is not None:
            self.not_decoding -= 1
            if self.queue is not None:
                self.queue = self.queue.replaced([old.id], [])
        self.records[i] = None
        del self.live[i]

    def lookup(self, rid: str, policy: str, role: str) -> int:
        """The index of live request `rid`; EngineError naming `policy` and `role` if none."""
        i = self.index.get(rid)
        if i is None or self.records[i] is None:
            raise not_live(policy, rid, role)
        return i

    def batch(self, plan: BatchPlan, policy: str) -> tuple[list[int], list[int]]:
        """The plan as request indices and chunks, checked against what each request has left."""
        index, records, prompt, prefilled = self.index, self.records, self.prompt, self.prefilled
        found: list[int] = []
        chunks: list[int] = []
        for allocation in plan.allocations:
            i = index.get(allocation.request_id)
            if i is None or records[i] is None:
                raise not_live(policy, allocation.request_id, "allocated")
            c = allocation.tokens
            if c > max(prompt[i] - prefilled[i], 1):
                raise EngineError(
                    f"policy {policy!r}: allocation {allocation!r} does not fit "
                    f"request {allocation.request_id!r} (prefill left {prompt[i] - prefilled[i]})"
                )
            found.append(i)
            chunks.append(c)
        if len(set(found)) != len(found):
            twice = next(
                a for a, i in zip(plan.allocations, found, strict=True) if found.count(i) > 1
            )
            raise EngineError(f"policy {policy!r}: request {twice.request_id!r} is allocated twice")
        return found, chunks


def not_live(policy: str, rid: str, role: str) -> EngineError:
    """The error of a plan naming a request that is not live."""
    return EngineError(f"policy {policy!r}: {role} id {rid!r} is not a live request")
