"""Built-in states to explain and teach with: the README's and the docs' worked example.

`EXAMPLES[name]()` gives (predictor, state). `readme` is the state of the README's "Use the
policy" (one decode, one waiting prompt; the packaged default predictor). `scene` is the
worked example of docs/algorithms (eight decodes, five prefills, a predictor simple enough to
check by hand: T̂ = 8 ms + 0.1 ms per decode + 0.02 ms per prefill token); tests hold both
equal to the text they come from.
"""

from __future__ import annotations

from collections.abc import Callable
from types import MappingProxyType

from slidingpolicy.predictors import default_predictor
from slidingpolicy.pricing.model import LatencyPredictor, LinearModel
from slidingpolicy.records.request import Request
from slidingpolicy.records.state import SchedulerState


def readme() -> tuple[LatencyPredictor, SchedulerState]:
    """The README's state at t = 12 s: "a" decoding (14 tokens out), "b" waiting (2000)."""
    decoding = Request("a", 10.0, 900, 900, 14, ttft_slo=3.0, tbt_slo=0.1)
    waiting = Request("b", 11.5, 2000, 0, 0, ttft_slo=3.0, tbt_slo=0.1)
    state = SchedulerState(now=12.0, requests=(decoding, waiting), prefill_throughput=8000.0)
    return default_predictor(), state


def _prefill(rid: str, left: int, slack: float, prefilled: int = 0) -> Request:
    return Request(rid, 0.0, prefilled + left, prefilled, 0, ttft_slo=slack, tbt_slo=0.1)


def _decode(i: int, slack: float) -> Request:
    return Request(f"d{i}", 0.0, 300, 300, 1, ttft_slo=slack / 2, tbt_slo=slack / 2)


def scene() -> tuple[LatencyPredictor, SchedulerState]:
    """The docs' worked example at its planning instant (t = 0; only slacks matter)."""
    toy = LinearModel(0.008, (0, 0, 0, 1e-4, 0, 2e-5, 0))
    decodes = tuple(_decode(i, 0.030 + 0.005 * i) for i in range(8))
    prefills = (
        _prefill("r1", 500, 0.040, prefilled=100),
        _prefill("r2", 800, 0.120, prefilled=50),
        _prefill("r3", 200, 0.080, prefilled=10),
        _prefill("r4", 1024, 0.200),
        _prefill("r5", 300, 0.060),
    )
    state = SchedulerState(0.0, (*decodes, *prefills), prefill_throughput=5000.0)
    return LatencyPredictor(toy, toy, toy, fallback=toy), state


EXAMPLES: MappingProxyType[str, Callable[[], tuple[LatencyPredictor, SchedulerState]]] = (
    MappingProxyType({"readme": readme, "scene": scene})
)
"""The built-in examples by name."""
