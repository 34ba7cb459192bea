"""Sarathi-Serve (Agrawal et al., OSDI 2024): stall-free batching with a fixed token budget.

Decodes first, then the prefills already in progress, then new prompts, each group in arrival
order, filled greedily up to the budget (the paper's chunk size; 512 by default).
"""

from __future__ import annotations

from slidingpolicy.policies.fixed_budget import FixedBudget
from slidingpolicy.pricing.model import LatencyPredictor
from slidingpolicy.records.candidates import arrival_key
from slidingpolicy.records.request import Request
from slidingpolicy.stages.order import Level, QueueOrder

NAME = "sarathi"
DEFAULT_TOKEN_BUDGET = 512


def in_progress_first_key(request: Request) -> tuple[object, ...]:
    """Partly prefilled requests before new prompts, then arrival, then id."""
    return (0 if request.prefilled > 0 else 1, *arrival_key(request))


IN_PROGRESS_FIRST = QueueOrder(
    in_progress_first_key,
    "arrival",
    (
        Level(lambda node: node.started > 0, lambda request: request.prefilled > 0),
        Level(lambda node: node.started < node.size, lambda request: request.prefilled == 0),
    ),
)
"""`in_progress_first_key` as two levels of the arrival index."""


def sarathi(predictor: LatencyPredictor, token_budget: int = DEFAULT_TOKEN_BUDGET) -> FixedBudget:
    """The Sarathi-Serve baseline with `token_budget` tokens per iteration."""
    return FixedBudget(predictor, NAME, token_budget, IN_PROGRESS_FIRST)
