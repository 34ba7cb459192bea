"""What a replica tells a router about itself: a `ReplicaReport`.

A report is made by the replica, from its own state and predictor (`reporting.report_of`), and
read by a router that may hold it for a while (a report period): so it says when it was made,
and carries what a router needs to predict, for a new request, when its first token could
come there, without asking again:

- when the replica's next step starts (`free_at`: its batch in flight ends);
- the prefill tokens waiting ahead of a new request, in the order a deadline-ordered policy
  serves them (`ahead`: each live waiting request's TTFT deadline and the tokens due by it);
- the prefill tokens per second it runs beside its decodes (`prefill_rate`);
- how many requests it holds, how many prompt tokens it has still to prefill, and the
  tightest slack of its decoding requests (`queued`, `queued_tokens`, `decoding`,
  `tightest_slack`): what the balancing routers read;
- whether its decodes keep their pace (`keeps_pace`): a replica whose decodes alone overrun
  their TBT SLO runs its prefill at the whole budget (its decodes late already), so its
  prefill rate is high while every request there, a new one included, decodes late;
- how many requests it had met when it made the report, counted from its start (`met`),
  so that a router can tell a request it sent and the replica has not met yet (on its way)
  from one the report counts.

The predicted first token of a request of p prompt tokens due at d, routed at `now`, is
max(now, free_at + A(d) / ρ) + p / ρ, with A(d) the tokens due by d ahead of it and ρ the
prefill rate: the replica serves the work due before d first (earliest deadline first, as
`slidingserve+` and `sarathi-edf` do; a late request is served after every live one), at its
rate, and the work drains while the report ages. Requests a router sent there since, due by
d, join that work when they were sent: a replica idle before a request came cannot have
spent that time on it.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from typing import Any

import attrs

from slidingpolicy import _validate
from slidingpolicy.errors import InvalidRecordError

AHEAD_POINTS = 32
"""The most (deadline, tokens) points a report lists: a longer queue is merged into this many
groups, each listed at its first deadline with the tokens up to its last (`merge_points`), so
that what a report says is due by d is never less than what is."""

RECORD = "replica report"


def _points(value: object) -> tuple[tuple[float, int], ...]:
    if not isinstance(value, tuple | list):
        raise InvalidRecordError(RECORD, "ahead", f"must be a tuple of pairs, got {value!r}")
    return tuple((p[0], p[1]) if isinstance(p, tuple | list) and len(p) == 2 else p for p in value)


@attrs.frozen(slots=True)
class ReplicaReport:
    """A replica's state as it reported it (module docstring).

    - `made_at`: when the report was made, on the clock the router shares (seconds).
    - `free_at`: when the replica's next step starts (its batch in flight ends), ≥ `made_at`.
    - `queued`: its waiting and prefilling requests.
    - `queued_tokens`: their prompt tokens not yet prefilled, late ones included.
    - `decoding`: its decoding requests.
    - `tightest_slack`: the least slack of a decoding request's next token at `free_at`
      (seconds; inf with none decoding; negative when one is late already).
    - `prefill_rate`: the prefill tokens per second it runs beside its decodes, by its
      predictor (0 when it can run none).
    - `ahead`: (TTFT deadline, tokens due by it), deadline order, of its waiting and
      prefilling requests whose deadline has not passed: cumulative tokens, at most
      `AHEAD_POINTS` points (`merge_points`).
    - `keeps_pace`: its predictor fits a prefill chunk beside its decodes within their
      tightest TBT SLO; False when its decodes alone overrun it (module docstring).
    - `met`: the requests it had met when the report was made, counted from its start
      (None: not counted; `Ledger.with_reports` reads it).
    """

    made_at: float
    free_at: float
    queued: int
    queued_tokens: int
    decoding: int
    tightest_slack: float
    prefill_rate: float
    ahead: tuple[tuple[float, int], ...] = attrs.field(default=(), converter=_points)
    keeps_pace: bool = True
    met: int | None = None

    def __attrs_post_init__(self) -> None:
        made = _validate.seconds(RECORD, "made_at", self.made_at)
        if _validate.seconds(RECORD, "free_at", self.free_at) < made:
            raise _validate.fail(RECORD, "free_at", f"={self.free_at} is before made_at={made}")
        _validate.integer(RECORD, "queued", self.queued, 0)
        queued_tokens = _validate.integer(RECORD, "queued_tokens", self.queued_tokens, 0)
        _validate.integer(RECORD, "decoding", self.decoding, 0)
        slack = self.tightest_slack
        if not isinstance(slack, int | float) or isinstance(slack, bool) or math.isnan(slack):
            raise _validate.fail(RECORD, "tightest_slack", f"must be a number, got {slack!r}")
        _validate.non_negative(RECORD, "prefill_rate", self.prefill_rate)
        _check_ahead(self.ahead, queued_tokens)
        _validate.flag(RECORD, "keeps_pace", self.keeps_pace)
        if self.met is not None:
            _validate.integer(RECORD, "met", self.met, 0)

    def tokens_ahead(self, deadline: float) -> int:
        """The prefill tokens it holds due by `deadline`: what a request due then waits for."""
        k = bisect.bisect_right(self.ahead, deadline, key=lambda point: point[0])
        return self.ahead[k - 1][1] if k else 0

    def first_token(
        self, tokens: int, deadline: float, now: float, sent: Sequence[tuple[float, int]] = ()
    ) -> float:
        """When a request of `tokens` prompt tokens due at `deadline`, routed here at `now`,
        would have its first token (module docstring), behind `sent`: the (time, tokens) of
        the requests due by then routed here since the report, in the order sent, each
        drained only from when it was sent; inf when the replica runs no prefill."""
        rate = self.prefill_rate
        if rate <= 0.0:
            return math.inf
        at, work = self.free_at, float(self.tokens_ahead(deadline))
        for sent_at, sent_tokens in sent:
            if sent_at > at:
                work = max(0.0, work - rate * (sent_at - at))
                at = sent_at
            work += sent_tokens
        return max(now, at + work / rate) + tokens / rate

    def to_dict(self) -> dict[str, Any]:
        """JSON values (`tightest_slack` inf as None): what a replica publishes."""
        data = attrs.asdict(self)
        data["ahead"] = [list(point) for point in self.ahead]
        if math.isinf(self.tightest_slack):
            data["tightest_slack"] = None
        return data

    @classmethod
    def from_dict(cls, data: object) -> ReplicaReport:
        """The report `to_dict` wrote; InvalidRecordError naming the field otherwise."""
        if not isinstance(data, dict):
            raise InvalidRecordError(RECORD, "data", f"must be an object, got {data!r}")
        names = [f.name for f in attrs.fields(cls)]
        missing = [name for name in names if name not in data]
        if missing:
            raise InvalidRecordError(RECORD, missing[0], "is missing")
        slack = data["tightest_slack"]
        values = {name: data[name] for name in names}
        values["tightest_slack"] = math.inf if slack is None else slack
        return cls(**values)


def _check_ahead(ahead: tuple[tuple[float, int], ...], queued_tokens: int) -> None:
    """Points of (deadline, cumulative tokens), both non-decreasing, tokens ≤ `queued_tokens`."""
    last_deadline, last_tokens = -math.inf, 0
    for point in ahead:
        if not isinstance(point, tuple):
            raise _validate.fail(RECORD, "ahead", f"holds {point!r}, not a (deadline, tokens) pair")
        deadline = _validate.finite(RECORD, "ahead", point[0])
        tokens = _validate.integer(RECORD, "ahead", point[1], 1)
        if deadline < last_deadline or tokens < last_tokens:
            raise _validate.fail(
                RECORD, "ahead", "must list deadlines and cumulative tokens in increasing order"
            )
        last_deadline, last_tokens = deadline, tokens
    if len(ahead) > AHEAD_POINTS:
        raise _validate.fail(RECORD, "ahead", f"lists {len(ahead)} points, most {AHEAD_POINTS}")
    if last_tokens > queued_tokens:
        raise _validate.fail(
            RECORD, "ahead", f"counts {last_tokens} tokens, more than queued_tokens={queued_tokens}"
        )


def merge_points(points: list[tuple[float, int]]) -> tuple[tuple[float, int], ...]:
    """Cumulative (deadline, tokens) points cut to at most `AHEAD_POINTS`: consecutive points
    in groups, each listed at its first deadline with its last point's tokens, so that
    `tokens_ahead` never reads less than the points say (at most one group more)."""
    if len(points) <= AHEAD_POINTS:
        return tuple(points)
    size = -(-len(points) // AHEAD_POINTS)
    return tuple(
        (points[start][0], points[min(start + size, len(points)) - 1][1])
        for start in range(0, len(points), size)
    )
