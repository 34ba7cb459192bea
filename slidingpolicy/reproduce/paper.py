"""What the paper (arXiv 2606.05933) reports (Fig. 4–6, Tables 4 and 5), for the report to set
beside ours."""

from __future__ import annotations

GAIN_OVER_SARATHI_EDF = (0.25, 1.11)
"""Fig. 4: SlidingServe's goodput over Sarathi-EDF, +25% to +111% across the data sets."""

GAIN_OVER_QOSERVE = (0.097, 0.30)
"""Fig. 4: SlidingServe's goodput over QoServe, +9.7% to +30%."""

LARGEST_GAIN, SMALLEST_GAIN = "arxiv", "sharegpt"
"""Fig. 4: long prompts (arXiv) gain most, short ones (ShareGPT) least."""

OVERLOAD_VIOLATION_CUT = 0.53
"""Fig. 5: at 2× goodput, SlidingServe's violation rate up to 53% below QoServe's; p50/p90
TTFT on a par with QoServe's, p99 sometimes higher (late requests are demoted)."""

BURST_VIOLATION_CUT = {"sarathi-edf": 0.3022, "qoserve": 0.2374}
"""Fig. 6: the violation rate through a transient overload, cut by SlidingServe."""

ABLATION = {
    "sarathi-edf": 0.0,
    "sarathi-edf+sc": 0.167,
    "sarathi-edf+sc+mlps": 0.224,
    "slidingserve": 0.278,
}
"""Table 4 (Qwen2.5-7B, mixed-v1): goodput over Sarathi-EDF as each piece is added."""

PREDICTOR = {
    "rtx3090 · qwen2.5-7b · TP1": (2.52, 4.12, 0.99),
    "rtx3090 · qwen2.5-7b · TP2": (2.72, 4.33, 0.99),
}
"""Table 5: MAE (ms), RMSE (ms) and R² (> 0.99) of the predictor on RTX 3090s."""
