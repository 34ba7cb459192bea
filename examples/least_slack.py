"""A policy of your own from scratch: least TTFT slack first, in chunks of at most `chunk`.

Load it with ``--plugin examples/least_slack.py``, then ``--policy 'least-slack[chunk=128]'``.
"""

import attrs
import numpy as np

from slidingpolicy import (
    Allocation,
    BatchPlan,
    LatencyPredictor,
    PlanBranch,
    SchedulerState,
    register,
)

NAME = "least-slack"


@attrs.frozen
class LeastSlack:
    """Decodes first (oldest first), then prefills by least slack, `chunk` tokens at most."""

    predictor: LatencyPredictor
    token_budget: int
    chunk: int
    name: str = NAME

    def init(self) -> None:
        return None  # nothing to remember between iterations

    def plan(self, pstate: None, state: SchedulerState) -> tuple[BatchPlan, None]:
        kv = state.kv_free_tokens
        room = self.token_budget if kv is None else min(self.token_budget, kv)
        decodes = sorted(state.decoding, key=lambda r: (r.arrival, r.id))
        batch = [(r, 1) for r in decodes[:room]]
        left_out = tuple(r.id for r in decodes[room:])  # short of KV: preempted, else deferred
        room -= len(batch)
        for request in sorted(state.prefill_candidates, key=lambda r: (r.deadline, r.id)):
            tokens = min(self.chunk, request.remaining_prefill, room)
            if tokens == 0:
                break
            batch.append((request, tokens))
            room -= tokens
        chunks = np.array([c for _, c in batch], dtype=np.int64)
        contexts = np.array([r.context_tokens for r, _ in batch], dtype=np.int64)
        short_of_kv = kv is not None and kv < self.token_budget
        plan = BatchPlan(
            tuple(Allocation(r.id, c) for r, c in batch),
            PlanBranch.WHOLE if batch else PlanBranch.IDLE,
            self.name,
            prefill_budget=sum(c for r, c in batch if not r.is_decoding),
            predicted_latency=self.predictor.predict(chunks, contexts),
            preempted=left_out if short_of_kv else (),
            deferred=() if short_of_kv else left_out,
        )
        return plan, pstate

    def observe(self, pstate: None, state: SchedulerState, plan: BatchPlan, latency: float) -> None:
        return pstate


def least_slack(
    predictor: LatencyPredictor, token_budget: int = 512, chunk: int = 256
) -> LeastSlack:
    """Decodes first, then prefills by least TTFT slack, in fixed chunks.

    - `token_budget`: tokens per iteration, decodes included.
    - `chunk`: the most prefill tokens one request gets in an iteration.
    """
    return LeastSlack(predictor, token_budget, chunk)


register(NAME, least_slack, ("token_budget", "chunk"), "Least TTFT slack first, 256-token chunks")
