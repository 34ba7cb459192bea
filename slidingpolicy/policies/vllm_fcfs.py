"""vLLM v1's default scheduler: FCFS with chunked prefill and no SLO logic.

Every running decode gets its token first, then prefills run in arrival order, each taking
what is left of the budget (`max_num_batched_tokens`, 8192 by default in vLLM v1 online
serving). vLLM schedules partly prefilled requests from its running queue before new ones
from its waiting queue; both are FCFS, so arrival order is the same order unless the engine
preempts, which the snapshot does not show.
"""

from __future__ import annotations

from slidingpolicy.policies.fixed_budget import FixedBudget
from slidingpolicy.pricing.model import LatencyPredictor
from slidingpolicy.stages.order import FCFS

NAME = "vllm"
DEFAULT_TOKEN_BUDGET = 8192


def vllm(predictor: LatencyPredictor, token_budget: int = DEFAULT_TOKEN_BUDGET) -> FixedBudget:
    """The vLLM baseline with `token_budget` tokens per iteration."""
    return FixedBudget(predictor, NAME, token_budget, FCFS)
