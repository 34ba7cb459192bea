from slidingpolicy import LatencyPredictor, LinearModel, Request, SchedulerState

# The worked example's scene at its planning instant (t = 0 here; only slacks matter).
# T̂ = 8 ms + 0.1 ms per decode + 0.02 ms per prefill token, in every scenario (eq. 6).
toy = LinearModel(0.008, (0, 0, 0, 1e-4, 0, 2e-5, 0))
predictor = LatencyPredictor(toy, toy, toy, fallback=toy)


def prefill(rid: str, left: int, slack: float, prefilled: int = 0) -> Request:
    """A request that arrived at 0 with `left` tokens to prefill and TTFT slack `slack`."""
    return Request(rid, 0.0, prefilled + left, prefilled, 0, ttft_slo=slack, tbt_slo=0.1)


def decode(i: int, slack: float) -> Request:
    """A decoding request (one token out) whose next token is due in `slack`."""
    return Request(f"d{i}", 0.0, 300, 300, 1, ttft_slo=slack / 2, tbt_slo=slack / 2)


decodes = tuple(decode(i, 0.030 + 0.005 * i) for i in range(8))  # tightest: 30 ms
r1 = prefill("r1", 500, 0.040, prefilled=100)
r2 = prefill("r2", 800, 0.120, prefilled=50)
r3 = prefill("r3", 200, 0.080, prefilled=10)
r4, r5 = prefill("r4", 1024, 0.200), prefill("r5", 300, 0.060)
state = SchedulerState(0.0, (*decodes, r1, r2, r3, r4, r5), prefill_throughput=5000.0)
