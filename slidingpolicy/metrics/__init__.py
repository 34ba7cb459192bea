"""What users read off a run: SLO attainment, latency statistics, throughput, goodput.

One definition each, used by the engine, the CLI, the reports and the tests:

- token k of request i (k = 1 is the first token) is due at d_k = a_i + L_ttft + (k − 1)·L_tbt
  (eq. 1); a request **attains its SLO** iff it completes and every token, the first included,
  is produced by its deadline;
- **TTFT attainment**: the first token by a_i + L_ttft; **max-gap TBT attainment**: the request
  completes and its largest gap between consecutive tokens is ≤ L_tbt. The SLO does not
  require the latter: a token ahead of its deadline banks slack, so a later gap longer than
  L_tbt can still meet every deadline (SLO attainment 100% beside max-gap attainment 10% is
  consistent: most gaps were long, no deadline was missed);
- every figure below is over the requests a run **counts**: all of them, or in a steady-state
  trial the window after its warm-up (`workloads.steady_state`); the others are load;
- attainments are fractions of the counted requests: a request still live at the end
  of a run has missed, and so has one the policy **gave up** (`BatchPlan.given_up`: the
  engine finished it unserved, with its own reason, so that its client can retry elsewhere),
  counted apart as `given_up`;
- latency statistics, each as mean, median, standard deviation (population), p90 and p99,
  the percentiles nearest-rank (the smallest value whose cumulative count reaches ⌈q·N/100⌉),
  the median the p50:
  - **TTFT**: first token − arrival, over requests that produced a token; and, with its wait
    so far, a request still **waiting** for its first token when a steady-state trial
    stopped at its horizon (it had missed by then): the statistics are then lower bounds,
    and `waiting` says how many;
  - **TPOT** (time per output token): (last token − first token) / (tokens − 1), over the
    completed requests with at least two tokens;
  - **ITL** (inter-token latency; TBT in the paper): every gap between consecutive tokens of a
    request, over all requests;
  - **E2E** (end-to-end latency): last token − arrival, over the completed requests;
  - **late TTFT** (p99 and max only): TTFT over the requests whose first token came after its
    TTFT deadline: what a late request, which a policy may serve last, waits;
  - **TTFT or notice** (p99 only): the first token − arrival, or for a request given up
    before its first token the notice − arrival: how long a client waits before it can act
    (read its answer, or retry elsewhere); the TTFT p99 when none is given up;
- **goodput**: the requests that attained their SLO per second of the run's span (what `vllm
  bench serve` calls request goodput); the engine's *capacity* is the highest arrival rate at
  which attainment stays ≥ 99% (`runs.capacity_search`);
- throughput: output tokens (and completed requests) per second of the run's span, from the
  first counted arrival to the run's end;
- **drain**: how long counted requests were still served on time after the last arrival
  (the last such request's last token − the last arrival, or 0): a finite trial's free
  time, with no later request competing; a steady-state trial has none until its arrivals
  run out, and a trial that is mostly drain does not stand for the long run;
- predictor error: the policy's predicted latency of a plan against the iteration's measured
  latency, over the iterations that schedule prefill tokens (where the prediction decides the
  chunk; decode-only iterations are advanced in closed form without a plan).
"""

from __future__ import annotations

from slidingpolicy.metrics.moments import exact_sum, moments
from slidingpolicy.metrics.outcome import RequestOutcome, outcome
from slidingpolicy.metrics.percentiles import (
    PERCENTILES,
    FloatArray,
    IntArray,
    merged_percentiles,
    percentile,
    percentiles,
)
from slidingpolicy.metrics.stats import (
    DURATION_UNITS,
    LATENCIES,
    STAT_NAMES,
    Stats,
    duration_unit,
    stat_fields,
)
from slidingpolicy.metrics.summary import SLO_TARGET, Metrics, summarize
from slidingpolicy.metrics.token_log import TokenLog, token_deadline

__all__ = [
    "DURATION_UNITS",
    "LATENCIES",
    "PERCENTILES",
    "SLO_TARGET",
    "STAT_NAMES",
    "FloatArray",
    "IntArray",
    "Metrics",
    "RequestOutcome",
    "Stats",
    "TokenLog",
    "duration_unit",
    "exact_sum",
    "merged_percentiles",
    "moments",
    "outcome",
    "percentile",
    "percentiles",
    "stat_fields",
    "summarize",
    "token_deadline",
]
