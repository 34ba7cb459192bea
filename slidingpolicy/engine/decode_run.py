"""Decode-only runs in closed form: the token times and latencies of many iterations at once.

When every live request is decoding and all fit the token budget and the KV cache, the only
valid plan gives each one token; the engine then prices all iterations up to the next event at
once, drawing the same noise in the same order as stepping, so that the results are those of
stepping, float for float (tested).
"""

from __future__ import annotations

import numpy as np

from slidingpolicy.engine.noise import Normals
from slidingpolicy.hardware import HardwareModel

RUN_CHUNK = 32
"""Decode-run iterations priced per batch at first (doubling up to `EngineOptions.max_run`):
a run usually ends at the next arrival, well before the KV or the output lengths end it."""

RUN_SCALAR = 16
"""Decode-run iterations priced one by one first, with the hardware's `decode_pricer` (most
runs are short: numpy's overhead per call would dominate them)."""


def run_times(
    hardware: HardwareModel,
    normals: Normals,
    now: float,
    decodes: int,
    context: int,
    steps: int,
    next_arrival: float,
) -> tuple[list[float], list[float]]:
    """Token times and noisy latencies of a run of at most `steps` iterations of `decodes`
    decodes from total context `context` at `now`, ending with the first iteration that ends
    at or after `next_arrival`: what stepping gives (each latency with the hardware's noise of
    the next normal, `with_noise`; the clock summed one iteration at a time), priced one by
    one, then in growing batches."""
    noise = hardware.with_noise
    times: list[float] = []
    latencies: list[float] = []
    price = hardware.decode_pricer(decodes)
    for j in range(min(steps, RUN_SCALAR)):
        if times and now >= next_arrival:
            return times, latencies
        latency = noise(price(context + j * decodes), normals.take())
        now += latency
        times.append(now)
        latencies.append(latency)
    done, size = len(times), RUN_CHUNK
    if done == steps or now >= next_arrival:
        return times, latencies
    while done < steps:
        k = min(size, steps - done)
        totals = context + np.arange(done, done + k, dtype=np.int64) * decodes
        base = hardware.decode_latencies(decodes, totals).tolist()
        noisy = [noise(b, z) for b, z in zip(base, normals.peek(k), strict=True)]
        noisy_latencies = np.array(noisy)
        clock = np.cumsum(np.concatenate(([now], noisy_latencies)))[1:]
        # Stepping stops before an iteration once the clock has reached the arrival.
        reached = np.flatnonzero(clock >= next_arrival)
        take = k if reached.size == 0 else int(reached[0]) + 1
        normals.skip(take)
        times.extend(clock[:take].tolist())
        latencies.extend(noisy_latencies[:take].tolist())
        if reached.size:
            break
        now = times[-1]
        done += take
        size *= 2
    return times, latencies
