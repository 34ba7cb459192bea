"""Steady-state trials: the requests a trial counts arrive after a warm-up, and arrivals go on
after them until every one of their deadlines has passed.

A finite trial that counts all its requests flatters any rate: its first requests meet an
empty engine, and its last ones are served while the queue drains with nothing arriving
behind them. On fast hardware a thousand requests arrive within a few seconds, so that
free time is most of the trial, and trials pass at rates no engine sustains. Steady-state
simulation deletes the initial transient instead (the replication–deletion method: Law,
*Simulation Modeling and Analysis*, ch. 9; the warm-up as in Welch's procedure):

- **warm-up**: ⌈λ · T_w⌉ requests of the same population at the same rate λ arrive first,
  T_w = `WARMUP_SLOS` × the shortest TTFT SLO of the counted requests. Under an overload of
  ε (arrivals ε above what the engine serves), the work waiting grows by ε seconds each
  second, so after T_w it delays every request by ε·T_w: with T_w = L/ε it is a whole SLO L.
  `WARMUP_SLOS` = 40 makes that hold for ε = 2.5%, the capacity search's precision, so a
  rate one search step above what the engine sustains is failed whatever the trial's size;
- **the window**: the counted requests (the trial's `-n`), exactly the finite trial's
  requests (same lengths, SLOs and arrival gaps for a seed, whatever the rate), shifted to
  start after the warm-up;
- **the tail**: arrivals of the same population go on until the horizon, the last deadline
  of any counted token (eq. 1), after which every counted request has met its SLO or
  missed it; the run ends when the last counted request has finished.

Warm-up and tail are independent streams of the trial's seed, so the counted requests are
the same as in the finite trial of that seed. The run's metrics judge the counted requests
only (`slidingpolicy.metrics`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import attrs
import numpy as np

from slidingpolicy.workloads.records import RequestSpec, Window, Workload

WARMUP_SLOS = 40
"""The warm-up's length in shortest TTFT SLOs: 1 / 2.5%, the capacity search's precision
(module docstring)."""
WARMUP_STREAM = 1
TAIL_STREAM = 2

Draw = Callable[[int, int], Workload]
"""`draw(k, stream)`: k requests of the trial's population at its rate, ids r0…, arriving
from time 0, from the independent stream `stream` of the trial's seed."""


def stream_seed(seed: int, stream: int) -> int:
    """The seed of an independent stream of `seed` (0 for the counted requests themselves)."""
    return int(np.random.SeedSequence([seed, stream]).generate_state(1)[0])


def warmup_seconds(counted: Workload) -> float:
    """T_w: `WARMUP_SLOS` times the shortest TTFT SLO of the counted requests."""
    return WARMUP_SLOS * float(counted.columns().ttft.min())


def horizon(counted: Workload, offset: float = 0.0) -> float:
    """The last deadline of any counted token (eq. 1), its requests shifted by `offset`."""
    c = counted.columns()
    return offset + float((c.arrival + c.ttft + (c.output - 1) * c.tbt).max())


def steady_state(counted: Workload, rate: float, draw: Draw) -> Workload:
    """The steady-state trial of `counted` at `rate` req/s (module docstring): warm-up
    requests w0…, the counted ones (ids kept) after them, tail requests t0… to the horizon."""
    warm = draw(max(1, math.ceil(rate * warmup_seconds(counted))), WARMUP_STREAM)
    offset = warm.requests[-1].arrival
    last = horizon(counted, offset)
    start = offset + counted.requests[-1].arrival
    expected = rate * (last - start)
    k = math.ceil(expected + 4.0 * math.sqrt(expected)) + 4
    tail = draw(k, TAIL_STREAM)
    while start + tail.requests[-1].arrival < last:
        k *= 2
        tail = draw(k, TAIL_STREAM)
    requests = (
        _moved(warm.requests, "w", 0.0)
        + _moved(counted.requests, "", offset)
        + tuple(r for r in _moved(tail.requests, "t", start) if r.arrival <= last)
    )
    window = Window(len(warm.requests), len(counted.requests), offset, last)
    return Workload(counted.name, requests, window)


def trial_text(workload: Workload) -> str:
    """What a run counts, in a line: a finite trial's every request, or a steady-state
    trial's window and the load around it."""
    window = workload.window
    if window is None:
        return f"a finite trial: every one of its {len(workload)} requests counted (no warm-up)"
    tail = len(workload) - window.first - window.count
    return (
        f"a steady-state trial: {window.count} requests counted after a warm-up of "
        f"{window.first} ({window.warmup:.3g} s), with up to {tail} more arriving behind them"
    )


def trials_text(workload: Workload) -> str:
    """What runs like `workload` at any rate count, in a line."""
    if workload.window is None:
        return f"finite trials: every one of their {len(workload)} requests counted (no warm-up)"
    measured = workload.measured()
    return (
        f"steady-state trials: {len(measured)} requests counted in each, after "
        f"{warmup_seconds(measured):.3g} s of warm-up at its rate ({WARMUP_SLOS} shortest TTFT "
        "SLOs), arrivals going on until every counted deadline has passed"
    )


def _moved(
    requests: tuple[RequestSpec, ...], prefix: str, offset: float
) -> tuple[RequestSpec, ...]:
    """`requests` arriving `offset` seconds later, each id r<i> renamed <prefix><i>."""
    return tuple(
        attrs.evolve(r, id=f"{prefix}{r.id[1:]}" if prefix else r.id, arrival=r.arrival + offset)
        for r in requests
    )
