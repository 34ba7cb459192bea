"""A run's iterations as a Chrome / Perfetto trace (the Trace Event Format's JSON object form).

`Timeline` is handed to `simulate` and told every iteration the engine runs; `document()` is
the trace, which `chrome://tracing` and the Perfetto UI (ui.perfetto.dev, "Open trace file")
open. Times are microseconds from the first arrival, each a whole number of nanoseconds, so
back-to-back spans abut exactly as a viewer reads them (Perfetto rounds µs × 1000 to integer
nanoseconds and drops a span that overlaps the one before it on its track). Two processes:

- **batches** (pid 1, tid 1): one complete event ("X") per iteration, named after the plan's path
  (`chunker`, `constructor`, a baseline's name, or `decode run` for the decode-only
  iterations the engine advances in closed form), with its tokens, requests and the
  predicted and actual latency in `args`; and a counter ("C") of both latencies, in ms.
- **requests** (pid 2): a thread per request (in workload order, tid FIRST_TID + its index):
  `queued` from its arrival to its first chunk, one event per prefill chunk, and its decode
  tokens as spans of back-to-back iterations (`decode ×N`); an instant event ("i") marks each
  deadline miss: a token produced after its eq. 1 deadline a + L_ttft + (k − 1)·L_tbt where
  the token before it was on time (the first late token of each late stretch).

A preempted request's recompute shows as further prefill chunks; its time waiting again is
not drawn as `queued`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from slidingpolicy._io import write_text
from slidingpolicy._paths import StrPath
from slidingpolicy.records.request import next_token_deadline
from slidingpolicy.workloads import Workload

BATCHES, REQUESTS = 1, 2
"""The trace's two processes."""
ITERATIONS = BATCHES
"""The batches' one thread, its process's main thread (tid = pid)."""
FIRST_TID = REQUESTS + 1
"""Request i is thread FIRST_TID + i. Perfetto reads thread 0 as its process's main thread
(tid = pid), lists a process's main thread first whatever its sort index, and reads one tid in
two processes as one thread: so no request is thread 0, a process's number or the batches'."""
NS = 1e9
"""Nanoseconds per second: every time is rounded to a whole nanosecond from the first arrival."""
NS_PER_US = 1e3
"""Nanoseconds per microsecond: the trace's time unit is the microsecond."""


class Timeline:
    """Collects one run's iterations (mutable, engine-side) and renders them as a trace."""

    def __init__(self, workload: Workload) -> None:
        columns = workload.columns()
        self.ids = [r.id for r in workload.requests]
        self._arrival: list[float] = columns.arrival.tolist()
        self._ttft: list[float] = columns.ttft.tolist()
        self._tbt: list[float] = columns.tbt.tolist()
        self._origin = self._arrival[0] if self._arrival else 0.0
        self.events: list[dict[str, Any]] = []
        self._started: list[bool] = [False] * len(self.ids)
        self._late: list[bool] = [False] * len(self.ids)
        self._decoding: dict[int, list[float]] = {}
        """Open decode spans: request → [start, end, tokens]."""

    def _ns(self, seconds: float) -> int:
        return round((seconds - self._origin) * NS)

    def _us(self, seconds: float) -> float:
        return self._ns(seconds) / NS_PER_US

    def _span(self, pid: int, tid: int, name: str, start: float, end: float, **args: Any) -> None:
        """A complete event: its end, ts + dur, is `end` to the nanosecond, as the next span's
        start is."""
        begin = self._ns(start)
        self.events.append(
            {
                "ph": "X",
                "pid": pid,
                "tid": tid,
                "name": name,
                "ts": begin / NS_PER_US,
                "dur": (self._ns(end) - begin) / NS_PER_US,
                "args": args,
            }
        )

    def _token(self, i: int, k: int, when: float) -> None:
        """Request i produced token k at `when`: mark a miss where a late stretch begins."""
        lateness = when - next_token_deadline(self._arrival[i], self._ttft[i], self._tbt[i], k - 1)
        late = lateness > 0.0
        if late and not self._late[i]:
            self.events.append(
                {
                    "ph": "i",
                    "s": "t",
                    "pid": REQUESTS,
                    "tid": FIRST_TID + i,
                    "name": "deadline miss",
                    "ts": self._us(when),
                    "args": {"token": k, "late_ms": round(lateness * 1e3, 3)},
                }
            )
        self._late[i] = late

    def _decode(self, i: int, start: float, end: float, tokens: int) -> None:
        """Extend request i's open decode span, or close it and open another."""
        span = self._decoding.get(i)
        if span is not None and span[1] == start:
            span[1], span[2] = end, span[2] + tokens
            return
        self._close(i)
        self._decoding[i] = [start, end, tokens]

    def _close(self, i: int) -> None:
        span = self._decoding.pop(i, None)
        if span is not None:
            self._span(
                REQUESTS, FIRST_TID + i, f"decode ×{int(span[2])}", span[0], span[1], tokens=span[2]
            )

    def _queued(self, i: int, start: float) -> None:
        if not self._started[i]:
            self._started[i] = True
            self._span(REQUESTS, FIRST_TID + i, "queued", self._arrival[i], start)

    def batch(
        self,
        start: float,
        end: float,
        indices: Sequence[int],
        chunks: Sequence[int],
        prefill: Sequence[bool],
        tokens: Sequence[int],
        produced: Sequence[bool],
        predicted: float,
        path: str,
    ) -> None:
        """One planned iteration, [start, end]: request indices[j] ran chunks[j] tokens (a
        prefill chunk where prefill[j]), produced a token at its end where produced[j], and
        has produced tokens[j] tokens by then."""
        done_prefill = sum(c for c, p in zip(chunks, prefill, strict=True) if p)
        self._batch_event(path, start, end, len(indices), sum(chunks), done_prefill, predicted)
        for i, c, p, k, new in zip(indices, chunks, prefill, tokens, produced, strict=True):
            self._queued(i, start)
            if p:
                self._close(i)
                self._span(REQUESTS, FIRST_TID + i, f"prefill {c}", start, end, tokens=c)
            else:
                self._decode(i, start, end, 1)
            if new:
                self._token(i, k, end)

    def decode_run(
        self, start: float, times: Sequence[float], indices: Sequence[int], before: Sequence[int]
    ) -> None:
        """Decode-only iterations advanced at once: every request indices[j] produced one token
        at each of `times`, having produced before[j] tokens."""
        ends = list(times)
        starts = [start, *ends[:-1]]
        for s, e in zip(starts, ends, strict=True):
            self._batch_event("decode run", s, e, len(indices), len(indices), 0, None)
        when: NDArray[np.float64] = np.asarray(ends, dtype=np.float64)
        for i, g in zip(indices, before, strict=True):
            self._decode(i, start, ends[-1], len(ends))
            k = np.arange(g + 1, g + 1 + len(ends), dtype=np.int64)
            due = np.ones(k.size)
            deadline = next_token_deadline(
                due * self._arrival[i], due * self._ttft[i], due * self._tbt[i], k - 1
            )
            late = when > deadline
            begins = late & ~np.concatenate(([self._late[i]], late[:-1]))
            for j in np.flatnonzero(begins).tolist():
                self._late[i] = False
                self._token(i, int(k[j]), ends[j])
            self._late[i] = bool(late[-1])

    def _batch_event(
        self,
        name: str,
        start: float,
        end: float,
        requests: int,
        tokens: int,
        prefill_tokens: int,
        predicted: float | None,
    ) -> None:
        actual_ms = round((end - start) * 1e3, 6)
        predicted_ms = None if predicted is None else round(predicted * 1e3, 6)
        self._span(
            BATCHES,
            ITERATIONS,
            name,
            start,
            end,
            requests=requests,
            tokens=tokens,
            prefill_tokens=prefill_tokens,
            predicted_ms=predicted_ms,
            actual_ms=actual_ms,
        )
        counter = {"actual": actual_ms}
        if predicted_ms is not None:
            counter["predicted"] = predicted_ms
        self.events.append(
            {
                "ph": "C",
                "pid": BATCHES,
                "name": "latency (ms)",
                "ts": self._us(start),
                "args": counter,
            }
        )

    def document(self, title: str = "slidingpolicy run") -> dict[str, Any]:
        """The trace: metadata naming the processes and threads, then every event."""
        for i in list(self._decoding):
            self._close(i)
        names = [
            _meta("process_name", BATCHES, 0, {"name": "batches"}),
            _meta("thread_name", BATCHES, ITERATIONS, {"name": "iterations"}),
            _meta("process_name", REQUESTS, 0, {"name": "requests"}),
            _meta("process_sort_index", BATCHES, 0, {"sort_index": 0}),
            _meta("process_sort_index", REQUESTS, 0, {"sort_index": 1}),
        ]
        for i, rid in enumerate(self.ids):
            names.append(_meta("thread_name", REQUESTS, FIRST_TID + i, {"name": rid}))
            names.append(_meta("thread_sort_index", REQUESTS, FIRST_TID + i, {"sort_index": i}))
        return {
            "displayTimeUnit": "ms",
            "otherData": {"title": title},
            "traceEvents": [*names, *self.events],
        }

    def write(self, path: StrPath, title: str = "slidingpolicy run") -> None:
        """`document(title)` as UTF-8 JSON at `path`, atomically: names as text, not \\u escapes
        (Perfetto shows an escape as written)."""
        document = json.dumps(self.document(title), separators=(",", ":"), ensure_ascii=False)
        write_text(path, document + "\n")


def _meta(name: str, pid: int, tid: int, args: dict[str, Any]) -> dict[str, Any]:
    return {"ph": "M", "pid": pid, "tid": tid, "name": name, "args": args}
