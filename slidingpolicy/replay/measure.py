"""What a client measured → the offline engine's token log, metrics and per-request outcomes.

A request's tokens are recorded at the times the client received them, on the run's clock
(seconds since it started, the clock of the workload's arrivals), into the engine's own
`TokenLog`; `outcome` and `summarize` then judge them exactly as they judge a simulated run:
token k due by a + L_ttft + (k − 1)·L_tbt (eq. 1), every metric with its one definition
(`slidingpolicy.metrics`). A request that failed (an HTTP error, a timeout, a stream cut
short) keeps the tokens it received and, being incomplete, misses its SLO: it is counted,
never dropped. A request the policy gave up on is one of them, its notice recorded as the
engine's own (`Metrics.given_up`, `ttft_or_notice_p99`).

A client cannot see the engine's iterations or preemptions: a replayed run reports them as
unknown (None), not as zero.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Sequence

import attrs

from slidingpolicy.errors import InvalidRecordError
from slidingpolicy.metrics import Metrics, RequestOutcome, TokenLog, outcome, summarize
from slidingpolicy.workloads import Workload

NOT_NEEDED = "not needed: the counted requests had finished"
"""The failure of a request around a steady-state trial's window, cut short or never sent
once the window's requests had all finished (it is not counted)."""

UNOBSERVED = ("iterations", "preemptions", "predictor_mae", "predictor_bias")
"""Metrics a client cannot measure (the engine's own counts and its policy's predictions)."""


@attrs.frozen(slots=True)
class Measured:
    """What the client saw of one request: when it was sent and when each of its tokens
    arrived (seconds on the run's clock), why it failed (None if it did not), and when it read
    the notice that the policy gave the request up (`give_up_after`; None if it did not)."""

    sent: float
    tokens: tuple[float, ...]
    failure: str | None = None
    notice: float | None = None

    def __attrs_post_init__(self) -> None:
        times = (self.sent, *self.tokens)
        if not all(math.isfinite(t) for t in times):
            raise InvalidRecordError("measured request", "tokens", "must be finite times")
        if any(b < a for a, b in itertools.pairwise(times)):
            raise InvalidRecordError(
                "measured request", "tokens", "must not come before the send or each other"
            )
        if self.notice is not None and not (
            math.isfinite(self.notice) and self.notice >= times[-1]
        ):
            raise InvalidRecordError(
                "measured request", "notice", "must be a finite time after the send and tokens"
            )


def token_log(workload: Workload, measured: Sequence[Measured]) -> TokenLog:
    """The engine's token log of the workload, each request's tokens at the measured times."""
    if len(measured) != len(workload):
        raise InvalidRecordError(
            f"workload {workload.name!r}",
            "measured",
            f"has {len(measured)} requests measured for {len(workload)} sent",
        )
    window = workload.window
    log = TokenLog(workload.columns(), None if window is None else window.indices)
    for i, request in enumerate(measured):
        for time in request.tokens:
            log.record((i,), time)
        if request.notice is not None:
            log.give_up(i, request.notice)
    return log


def run_end(workload: Workload, measured: Sequence[Measured]) -> float:
    """The end of a replayed run: its counted requests' last token, or their last arrival if
    none came after."""
    counted = workload.counted
    last = max((measured[i].tokens[-1] for i in counted if measured[i].tokens), default=-math.inf)
    return max(last, workload.requests[counted[-1]].arrival)


def judge(workload: Workload, measured: Sequence[Measured]) -> tuple[Metrics, RequestOutcome]:
    """The run's metrics and per-request outcomes, as `simulate` computes them; the metrics a
    client cannot observe (`UNOBSERVED`) are zero or NaN here, and reported as None."""
    log = token_log(workload, measured)
    return summarize(log, run_end(workload, measured), iterations=0), outcome(log)


def failures(workload: Workload, measured: Sequence[Measured]) -> dict[str, int]:
    """How many counted requests failed, by reason, most frequent first."""
    reasons = (measured[i].failure for i in workload.counted)
    return dict(Counter(r for r in reasons if r is not None).most_common())


def send_lag(workload: Workload, measured: Sequence[Measured]) -> float:
    """The latest a counted request was sent after its arrival time (the client's own
    delay)."""
    requests = workload.requests
    return max((measured[i].sent - requests[i].arrival for i in workload.counted), default=0.0)
