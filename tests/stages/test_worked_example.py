"""The worked example of the docs (docs/algorithms/mlps.md and the pages after it), computed
from the formulas.

Scene at t = 50 ms: 8 decodes whose tightest TBT slack is 30 ms; prefilling r1 (500 tokens
left, TTFT slack 40 ms), r2 (800, 120 ms), r3 (200, 80 ms); waiting r4 (1024, 200 ms),
r5 (300, 60 ms); ρ = 5000 tokens/s; B_max = 2048.

Each step follows the formulas (docs/algorithms/equations.md):
- Step 1: u(r4) = 1024 / (5000 · 0.2) = 1.024 > α = 1, so r4 is urgent; u(r5) =
  300 / (5000 · 0.06) = 1.0 is not > α. Eq. 15 then orders the calm ones by r: r3 (200)
  before r5 (300): [r1, r2, r4, r3, r5].
- Step 2: filling 2040 tokens in that order takes r1, r2 and 740 tokens of r4.
- Step 4: the policy caps the anchor's time at T_a = min(s_a, T_cur) = 30 ms and draws S_a
  from the candidate batch (r2, r4); eq. 17 as written uses s_a = 40 ms and S_a =
  {r2, r3, r5}. Both are computed below.

The predictor is a simple one chosen so the arithmetic can be checked by hand:
T̂ = 8.0 ms + 0.1 ms per decode + 0.02 ms per prefill token (chunks ≥ 2 tokens).
"""

from __future__ import annotations

import pytest

from slidingpolicy import (
    LatencyPredictor,
    LinearModel,
    Request,
    SchedulerState,
    SlidingServe,
    sort_candidates,
)
from slidingpolicy.pricing.queue import PricedQueue
from slidingpolicy.stages.construct import values
from slidingpolicy.stages.order import is_urgent
from tests.stages.reference import one_anchor

NOW = 0.0  # the clock origin; only slacks matter, and s = L_ttft is then exact in floats
RHO = 5000.0
MODEL = LinearModel(0.008, (0.0, 0.0, 0.0, 1e-4, 0.0, 2e-5, 0.0))
PREDICTOR = LatencyPredictor(MODEL, MODEL, MODEL, fallback=MODEL)


def prefill(rid: str, left: int, slack: float, prefilled: int = 0) -> Request:
    """A request arriving now with `left` prompt tokens to go and TTFT slack `slack`."""
    return Request(rid, NOW, prefilled + left, prefilled, 0, slack, 0.1)


def decode(i: int, slack: float) -> Request:
    """A decoding request (1 token out) whose next token is due in `slack`."""
    return Request(f"d{i}", NOW, 300, 300, 1, slack / 2, slack / 2)


DECODES = tuple(decode(i, 0.030 + 0.005 * i) for i in range(8))
R1 = prefill("r1", 500, 0.040, 100)
R2 = prefill("r2", 800, 0.120, 50)
R3 = prefill("r3", 200, 0.080, 10)
R4, R5 = prefill("r4", 1024, 0.200), prefill("r5", 300, 0.060)
STATE = SchedulerState(NOW, (*DECODES, R1, R2, R3, R4, R5), RHO)


def test_step_1_urgency_and_mlps_order() -> None:
    urgent = {
        r.id: is_urgent(r.remaining_prefill, r.deadline, NOW, RHO, 1.0, 1e-3)
        for r in (R1, R2, R3, R4, R5)
    }
    assert urgent == {"r1": True, "r2": True, "r3": False, "r4": True, "r5": False}
    assert [r.id for r in sort_candidates(STATE)] == ["r1", "r2", "r4", "r3", "r5"]


def test_steps_2_to_4_the_policy_decides_by_the_constructor() -> None:
    plan, _ = SlidingServe(PREDICTOR).plan(SlidingServe(PREDICTOR).init(), STATE)
    d = plan.diagnostics
    # Step 2-3: candidate batch r1 + r2 + 740 of r4 = 2040 prefill tokens with 8 decodes:
    # 8.0 + 0.8 + 0.02 · 2040 = 49.6 ms; only r1 (40 ms) is live with s < 49.6 ms.
    assert d.candidate_latency == pytest.approx(0.0496)
    assert d.risky == ("r1",)
    # Step 4: T_a = min(40, 30) ms; C_a = (30 − 8.8) / 0.02 = 1060 tokens; r1 takes 500, the
    # knapsack has 560 left and neither r2 (800) nor r4 (1024) fits: Y = {r1}.
    assert plan.branch == "constructor"
    assert d.anchor == "r1"
    assert d.t_cur == pytest.approx(0.030)
    assert plan.tokens_of() == {**{f"d{i}": 1 for i in range(8)}, "r1": 500}
    assert plan.predicted_latency == pytest.approx(0.0088 + 0.010)


def test_step_4_as_the_note_states_it() -> None:
    """Anchor r1 with T_a = s_a = 40 ms over S_a = {r2, r3, r5}: the DP picks {r3, r5}."""
    pool = [R2, R3, R5]
    worth = values(pool, NOW)
    # eq. 18: Σs = 0.26 s, Σr = 1300; v = 1 / (s/Σs + r/Σr).
    assert worth == pytest.approx(
        [
            1 / (0.12 / 0.26 + 800 / 1300),
            1 / (0.08 / 0.26 + 200 / 1300),
            1 / (0.06 / 0.26 + 300 / 1300),
        ]
    )
    base = PricedQueue.of(PREDICTOR, DECODES, [R1, *pool])
    built = one_anchor(base, R1, [R1, *pool], NOW, limit=0.040, cap=2040)
    assert built is not None
    # C_a = (40 − 8.8) / 0.02 = 1560; capacity 1560 − 500 = 1060. Two items fit at most:
    # {r3, r5} (500 tokens, Σv ≈ 4.33) beats {r2, r3} (1000 tokens, Σv ≈ 3.10) — and a
    # 1008-token batch: 8 decodes + r1 500 + r3 200 + r5 300.
    assert [r.id for r in built.chosen] == ["r1", "r3", "r5"]
    assert 8 + sum(r.remaining_prefill for r in built.chosen) == 1008
    assert built.latency == pytest.approx(0.0088 + 0.020)
    assert not built.repaired


def test_step_6_the_next_iteration_is_the_chunkers() -> None:
    """After r1 finishes, nothing is at risk and the SlidingChunker decides with T_cur."""
    later = SchedulerState(NOW, (*DECODES, R2, R3, R4, prefill("r5", 300, 0.6)), RHO)
    plan, _ = SlidingServe(PREDICTOR).plan(SlidingServe(PREDICTOR).init(), later)
    assert plan.branch == "chunker"
    assert plan.diagnostics.t_cur == pytest.approx(0.030)
    assert plan.predicted_latency <= 0.030 + 1e-12
    # T̂ is linear in the tokens, so eq. 9's cost is the same for every b the deadline allows
    # (B_Σ = (45 − 8.8) / 0.02 = 1809 over both iterations): no deferral takes the largest,
    # TimeToBudget(T_cur) = (30 − 8.8) / 0.02 = 1060, however its closed forms round.
    assert plan.diagnostics.budget_sum == 1809
    assert plan.prefill_budget == 1060
