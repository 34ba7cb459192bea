"""How many iterations the tokens' deadlines force: the bound's pacing (eq. 1).

A request that attains produces its o tokens by a + L_ttft + (o − 1)·L_tbt, each in its own
iteration, every one of which starts after it arrives: its window [a, a + L_ttft +
(o − 1)·L_tbt] holds at least o iterations. Windows that do not overlap hold different
iterations, so the iterations of a run number at least the tokens of any chain of pairwise
disjoint windows of requests that attain. Two ways to use it:

- on a trace (`chain_weights`): the heaviest chain by weighted interval scheduling,
  robust to misses: with m requests allowed to miss, m + 1 chains that share no request leave
  one whole, so the run has at least the lightest one's tokens;
- in the long run (`iteration_rate`): take the requests whose windows hold at least ρ tokens
  per second ("long"; a fraction q of arrivals, each window at least w_min long) and chain
  greedily: after a window ends, the next long request to arrive that attains. The chain's
  windows cover all time but its gaps, and the gaps hold no chosen arrival: each gap lies in
  spacings between long arrivals, one for the window's end (consecutive windows end in
  different spacings) and one more for each long request that misses. Over a horizon E there
  are at most E / w_min windows and δ·λ·E misses (attainment ≥ 1 − δ), so the gaps are at
  most the longest E·(1 / w_min + δλ) spacings of the long arrivals, a Poisson process of
  rate μ = λq: in the limit a fraction g(f) = f·(1 + ln(1/f)) of time, f = (1/w_min + δλ)/μ
  (the share of time in the longest fraction f of exponential spacings). So the run has at
  least ρ·(1 − g(f)) iterations per second, whoever chooses which requests miss.
"""

from __future__ import annotations

import bisect

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]


def longest_spacings(fraction: FloatArray) -> FloatArray:
    """The share of time in the longest `fraction` of the spacings of a Poisson process:
    f·(1 + ln(1/f)), 1 from f ≥ 1 on (elementwise, f > 0)."""
    f = np.minimum(fraction, 1.0)
    share: FloatArray = f * (1.0 - np.log(f))
    return share


def iteration_rate(
    tokens: FloatArray, window: FloatArray, mass: FloatArray, rate: float, miss: float
) -> float:
    """Iterations per second at least, in the long run, at Poisson `rate` with a fraction
    `miss` of requests allowed to miss: the best threshold ρ (module docstring) over the
    requests' (tokens, window) pairs of probability `mass`."""
    if rate <= 0.0:
        return 0.0
    ratio = tokens / window
    order = np.argsort(-ratio, kind="stable")
    share = np.cumsum(mass[order])
    shortest = np.minimum.accumulate(window[order])
    keep = share > 0.0
    gaps = longest_spacings((1.0 / shortest[keep] + miss * rate) / (rate * share[keep]))
    return float(np.max(ratio[order][keep] * (1.0 - gaps), initial=0.0))


def chain_weights(
    starts: FloatArray, ends: FloatArray, tokens: FloatArray, count: int
) -> list[float]:
    """The weights of up to `count` request-disjoint chains (module docstring): each the
    heaviest chain of disjoint windows [start, end], `tokens` iterations each, among the
    requests no earlier chain took. With m misses allowed, a run needs at least the lightest
    of the first m + 1 (and nothing, if there are fewer)."""
    free = np.flatnonzero(tokens > 0)
    weights: list[float] = []
    while free.size and len(weights) < count:
        chosen, weight = heaviest_chain(starts[free], ends[free], tokens[free])
        weights.append(weight)
        free = np.delete(free, chosen)
    return weights


def heaviest_chain(
    starts: FloatArray, ends: FloatArray, tokens: FloatArray
) -> tuple[list[int], float]:
    """Weighted interval scheduling: the indices of the disjoint windows (one may end where
    the next starts) of the largest total weight, and that weight."""
    order = np.argsort(ends, kind="stable")
    end_list = ends[order].tolist()
    start_list = starts[order].tolist()
    weight = tokens[order].tolist()
    best = [0.0] * (len(order) + 1)
    take = [False] * len(order)
    before = [0] * len(order)
    for j in range(len(order)):
        before[j] = bisect.bisect_right(end_list, start_list[j], 0, j)
        with_j = weight[j] + best[before[j]]
        take[j] = with_j > best[j]
        best[j + 1] = with_j if take[j] else best[j]
    chosen, j = [], len(order)
    while j > 0:
        if take[j - 1]:
            chosen.append(int(order[j - 1]))
            j = before[j - 1]
        else:
            j -= 1
    return chosen, best[-1]
