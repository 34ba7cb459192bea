"""Hand-built requests and states for the behaviour tests of the baselines."""

from __future__ import annotations

from slidingpolicy import Request, SchedulerState

NOW = 100.0


def decode(rid: str, slack: float = 1.0, context: int = 100, tbt: float = 0.1) -> Request:
    """A decoding request whose next-token deadline is `slack` seconds away."""
    ttft = 1.0
    return Request(rid, NOW + slack - ttft - tbt, context, context, 1, ttft, tbt)


def prompt(rid: str, arrival: float, tokens: int, prefilled: int = 0, ttft: float = 5.0) -> Request:
    """A waiting (or, with `prefilled`, partly prefilled) request."""
    return Request(rid, arrival, tokens, prefilled, 0, ttft, 0.1)


def snapshot(*requests: Request, kv: int | None = None) -> SchedulerState:
    """The state at NOW holding `requests`."""
    return SchedulerState(NOW, requests, prefill_throughput=8000.0, kv_free_tokens=kv)
