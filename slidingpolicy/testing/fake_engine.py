"""A continuous-batching engine in memory, bound to a policy the way a real engine's adapter
binds it: the smallest binding there is, and the conformance suite's fake engine.

`FakeEngine` holds requests (a prompt, an output length, SLO keys as they came on the wire),
a running and a waiting queue, and a token budget a step. Its own scheduler is first come,
first served (decodes, then prefill chunks in queue order). A step takes simulated time, a
fixed cost plus a cost a token, on the engine's own clock, which the policy's loop reads
too. Its adapter is the part an engine binding writes: `FakeView` reads the queues into
records, `FakeEngine.step` applies a plan (or its own schedule on a fallback) and finishes
alone the requests the loop names.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from slidingpolicy.embedding.clock import Clock
from slidingpolicy.embedding.config import AdapterConfig
from slidingpolicy.embedding.loop import PolicyLoop, StepMetrics, require_budget
from slidingpolicy.embedding.wire import slo_on_wire
from slidingpolicy.policy import Policy
from slidingpolicy.records.request import Request
from slidingpolicy.records.slo import Slo


@attrs.define
class FakeRequest:
    """One request as the fake engine keeps it."""

    id: str
    prompt: int
    max_tokens: int
    xargs: Mapping[str, Any] | None
    created: float
    computed: int = 0
    generated: int = 0
    notice: str | None = None
    done: bool = False

    @property
    def need(self) -> int:
        """Tokens it would run now: what is left of its prompt, else one decode."""
        return self.prompt - self.computed if self.computed < self.prompt else 1


class FakeView:
    """The engine's requests as the policy's loop reads them."""

    def __init__(self, engine: FakeEngine) -> None:
        self.engine = engine

    def candidates(self) -> Iterable[tuple[str, FakeRequest]]:
        engine = self.engine
        for rid in [*engine.running, *engine.waiting]:
            yield rid, engine.requests[rid]

    def slo(self, handle: FakeRequest, default: Slo) -> Slo:
        return slo_on_wire(handle.xargs, default)

    def stamp(self, handle: FakeRequest) -> float:
        return handle.created

    def clock(self) -> float:
        return self.engine.time

    def record(
        self, handle: FakeRequest, slo: Slo, arrival: float, known: Request | None
    ) -> Request | None:
        prefilled, generated = handle.computed, handle.generated
        if known is not None and (known.prefilled, known.generated) == (prefilled, generated):
            return known
        if known is not None and known.is_decoding and known.generated + 1 == generated:
            return known.next_token()
        return Request(handle.id, arrival, handle.prompt, prefilled, generated, slo.ttft,
                       slo.tbt, slo.protected, handle.max_tokens)  # fmt: skip

    def live(self, request_id: str) -> bool:
        found = self.engine.requests.get(request_id)
        return found is not None and not found.done


class FakeEngine:
    """The engine, steered by the policy of `config` (or `policy`); `max_batch_tokens` a
    step (None: the policy's budget); a step of n tokens takes `base + per_token·n` seconds
    of the engine's clock."""

    def __init__(
        self,
        config: AdapterConfig | Mapping[str, Any],
        *,
        policy: Policy[Any] | None = None,
        metrics: StepMetrics | None = None,
        max_batch_tokens: int | None = None,
        base: float = 2e-3,
        per_token: float = 2e-5,
    ) -> None:
        if not isinstance(config, AdapterConfig):
            config = AdapterConfig.from_mapping(config)
        self.time = 0.0
        self.requests: dict[str, FakeRequest] = {}
        self.running: list[str] = []
        self.waiting: list[str] = []
        self.base, self.per_token = base, per_token
        self.loop: PolicyLoop[FakeRequest] = PolicyLoop(
            config, FakeView(self), fallback="the fake engine's FIFO schedules such steps",
            policy=policy, metrics=metrics, clock=Clock(lambda: self.time),
        )  # fmt: skip
        budget = self.loop.policy.token_budget if max_batch_tokens is None else max_batch_tokens
        require_budget(self.loop.policy, budget, "fake engine", "max_batch_tokens", "raise it")
        self.max_batch_tokens = budget

    def add(self, request_id: str, prompt: int, max_tokens: int, xargs: object = None) -> None:
        """Admit a request; SLO keys no request may have are refused here, at the door
        (`InvalidRecordError` naming the key), and the request is not added."""
        slo_on_wire(xargs)
        carried = dict(xargs) if isinstance(xargs, Mapping) else None
        self.requests[request_id] = FakeRequest(request_id, prompt, max_tokens, carried, self.time)
        self.waiting.append(request_id)

    def cancel(self, request_id: str) -> None:
        """The client left: drop the request."""
        self._end(request_id)
        self.loop.forget(request_id, cancelled=True)

    def idle(self) -> bool:
        """Whether no request is left."""
        return not self.running and not self.waiting

    def step(self) -> None:
        """One step: decide, finish alone what the loop names, run the plan (or the engine's
        own schedule), and tell the loop the step's time."""
        decision = self.loop.decide(self.max_batch_tokens)
        for rid, notice in self.loop.take_finished().items():
            self.requests[rid].notice = notice
            self._end(rid)
        plan = decision.planned
        if plan is not None:
            planned = plan.tokens_of().items()
            scheduled = {rid: t for rid, t in planned if not self.requests[rid].done}
        else:
            scheduled = self._first_come()
        self.loop.started(decision, scheduled)
        self.time += self.base + self.per_token * sum(scheduled.values())
        for rid, tokens in scheduled.items():
            self._advance(self.requests[rid], tokens)
        self.loop.finished()

    def _first_come(self) -> dict[str, int]:
        """The engine's own schedule: every running decode, then prefill chunks in order."""
        scheduled: dict[str, int] = {}
        left = self.max_batch_tokens
        for rid in [*self.running, *self.waiting]:
            tokens = min(self.requests[rid].need, left)
            if tokens > 0:
                scheduled[rid] = tokens
                left -= tokens
        return scheduled

    def _advance(self, request: FakeRequest, tokens: int) -> None:
        if request.id in self.waiting:
            self.waiting.remove(request.id)
            self.running.append(request.id)
        if request.computed < request.prompt:
            request.computed += min(tokens, request.need)
            request.generated += request.computed >= request.prompt
        else:
            request.generated += 1
        if request.generated >= request.max_tokens:
            self._end(request.id)
            self.loop.forget(request.id)

    def _end(self, request_id: str) -> None:
        request = self.requests[request_id]
        request.done = True
        for queue in (self.running, self.waiting):
            if request_id in queue:
                queue.remove(request_id)
