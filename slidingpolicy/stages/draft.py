"""The draft of a plan: what every stage of SlidingServe reads, prepared once per iteration
(`stages.decision` chains the stages over it)."""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from slidingpolicy.pricing.model import LatencyPredictor
from slidingpolicy.pricing.queue import PricedQueue
from slidingpolicy.records.request import Request
from slidingpolicy.records.sliding_config import SlidingConfig
from slidingpolicy.records.state import SchedulerState
from slidingpolicy.stages.admit import Admission, admit, kv_admitted
from slidingpolicy.stages.deadlines import window_deadlines
from slidingpolicy.stages.order import mlps_head


@attrs.frozen(slots=True)
class Draft:
    """The admitted decodes, the head of the ordered queue (what the window can run) priced
    beside them, the window's deadlines W_1..W_k (eq. 7–8), the latency margin m, and the
    name of the policy whose plan it drafts; `record` asks the stages to keep what only a
    reader needs (`stages.decision`)."""

    now: float
    config: SlidingConfig
    admission: Admission
    queue: tuple[Request, ...]
    priced: PricedQueue
    horizon: tuple[float, ...]
    margin: float
    policy: str
    record: bool = False

    @property
    def cap(self) -> int:
        """The prefill tokens this iteration may run (B_max less the admitted decodes)."""
        return self.admission.prefill_cap

    @property
    def t_cur(self) -> float | None:
        """T_cur (eq. 7), or None when no decode bounds the iteration."""
        return self.horizon[0] if self.horizon else None

    @property
    def t_next(self) -> float | None:
        """The second iteration's own share of the window, W_2 − W_1 (eq. 8), if any."""
        return self.horizon[1] - self.horizon[0] if len(self.horizon) > 1 else None


def prepare(
    predictor: LatencyPredictor,
    config: SlidingConfig,
    margin: float,
    state: SchedulerState,
    policy: str,
    record: bool = False,
) -> Draft:
    """Admit the decodes, order the head of the queue (MLPS or EDF), price it, and set the
    window, for the plan of the policy named `policy`."""
    now = state.now
    admission = admit(state, config.max_batch_tokens)
    reach = config.window * admission.prefill_cap
    free, decodes, headroom = state.kv_free_tokens, len(admission.decodes), config.kv_headroom

    def startable(stream: Iterable[Request]) -> Iterable[Request]:
        return kv_admitted(stream, free, decodes, headroom)

    queue = mlps_head(state, config, reach, startable)
    priced = PricedQueue.of(predictor, admission.decodes, queue, reach=reach)
    horizon = window_deadlines(admission.decodes, now, config.window)
    return Draft(now, config, admission, tuple(queue), priced, horizon, margin, policy, record)
