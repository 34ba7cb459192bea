"""The run's requests: columns indexed by request (workload order), and which of them are live.

Python lists, as an iteration touches a handful of requests (lists are several times cheaper
than numpy there). The `Request` records a policy sees are built once per request and rebuilt
(`refresh`) only for the requests an iteration changed, with the engine's trusted constructor:
the table keeps its columns valid. Tokens produced are counted by the run's `TokenLog`, in the
original request's terms; after a recompute (module doc of `simulator`) a record counts them
from its current admission.
"""

from __future__ import annotations

import math

from slidingpolicy.engine.errors import EngineError
from slidingpolicy.engine.metrics import TokenLog
from slidingpolicy.engine.trusted import trusted_request
from slidingpolicy.records.plan import BatchPlan
from slidingpolicy.records.request import Request
from slidingpolicy.workloads import WorkloadColumns


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
        self.live: list[int] = []
        self.not_decoding = 0
        """Live requests whose prompt is not all cached."""
        self.next_arrival = 0
        """The index of the next request to arrive (n when all have)."""

    def refresh(self, indices: list[int]) -> None:
        """(Re)build the records of live requests `indices` from the columns, in the terms of
        their current admission."""
        records, ids, arrival, prompt = self.records, self.ids, self.arrival, self.prompt
        prefilled, generated, base = self.prefilled, self.log.counts, self.base
        ttft, tbt, build = self.admitted_ttft, self.tbt, trusted_request
        for i in indices:
            records[i] = build(
                ids[i], arrival[i], prompt[i], prefilled[i], generated[i] - base[i], ttft[i], tbt[i]
            )

    def admit_arrivals(self, now: float) -> None:
        """Make live every request that has arrived by `now`."""
        arrival, n = self.arrival, self.n
        while self.next_arrival < n and arrival[self.next_arrival] <= now:
            i = self.next_arrival
            self.refresh([i])
            self.live.append(i)
            self.not_decoding += 1
            self.next_arrival += 1

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

    def retire_and_refresh(self, indices: list[int]) -> list[int]:
        """Retire the requests of `indices` that produced their last token and refresh the
        others' records; returns the retired ones."""
        generated, output, records = self.log.counts, self.output_tokens, self.records
        going: list[int] = []
        done: list[int] = []
        for i in indices:
            if generated[i] == output[i]:
                records[i] = None
                done.append(i)
            else:
                going.append(i)
        if done:
            self.live = [i for i in self.live if records[i] is not None]
        self.refresh(going)
        return done

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
