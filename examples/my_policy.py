"""A policy of your own: shortest remaining prefill first, under a fixed token budget.

Load it with ``--plugin examples/my_policy.py`` (or import it), then name it like ours:
``slidingpolicy simulate --plugin examples/my_policy.py --policy shortest-first``.
"""

from slidingpolicy import LatencyPredictor, register
from slidingpolicy.policies import FixedBudget
from slidingpolicy.records.candidates import remaining_key
from slidingpolicy.stages.order import Level, QueueOrder

NAME = "shortest-first"
EVERY = Level(possible=lambda node: True, member=lambda request: True)
SHORTEST_FIRST = QueueOrder(key=remaining_key, kind="remaining", levels=(EVERY,))


def shortest_first(predictor: LatencyPredictor, token_budget: int = 1024) -> FixedBudget:
    """Decodes first, then prefills by fewest prompt tokens left (then arrival).

    - `token_budget`: tokens per iteration, decodes included.
    """
    return FixedBudget(predictor, NAME, token_budget, SHORTEST_FIRST)


register(NAME, shortest_first, ("token_budget",), "Shortest remaining prefill first, 1024 tokens")
