"""Sarathi-EDF: Sarathi-Serve's fixed budget with prefills in earliest-TTFT-deadline order.

The paper's main baseline (its Table 4 row 0). The deadline of a request still in prefill is
its TTFT deadline a_i + L_ttft (`Request.deadline` with no token generated yet), so the
shared `deadline_key` (the `EDF` order) is exactly this order, the one the `sarathi-edf+sc`
ablation also uses.
"""

from __future__ import annotations

from slidingpolicy.policies.fixed_budget import FixedBudget
from slidingpolicy.policies.sarathi import DEFAULT_TOKEN_BUDGET
from slidingpolicy.pricing.model import LatencyPredictor
from slidingpolicy.stages.order import EDF

NAME = "sarathi-edf"


def sarathi_edf(
    predictor: LatencyPredictor, token_budget: int = DEFAULT_TOKEN_BUDGET
) -> FixedBudget:
    """The Sarathi-EDF baseline with `token_budget` tokens per iteration."""
    return FixedBudget(predictor, NAME, token_budget, EDF)
