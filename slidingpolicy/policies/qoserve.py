"""QoServe: hybrid priority, dynamic chunking from a token menu, and eager relegation.

Sources. The paper: K. Goel, J. Mohan, N. Kwatra, R. S. Anupindi, R. Ramjee, QoServe
(ASPLOS 2026), preprint "Niyama: Breaking the Silos of LLM Inference Serving",
arXiv:2503.22562. The reference implementation: the `niyama_asplos2026` branch of
github.com/microsoft/sarathi-serve (read at commit 72339db5), `DeadlineScheduler` in
`sarathi/core/scheduler/deadline_scheduler.py`, its priority in `Sequence.__lt__`
(`sarathi/core/datatypes/sequence.py`) and its defaults in `DeadlineSchedulerConfig`
(`sarathi/config/config.py`). This module restates that algorithm on our records; it
copies no code.

One iteration:

1. Relegate: a request that has not started its prefill (prefilled = 0) and cannot finish
   it by its TTFT deadline at the expected throughput, now + r_i/θ > a_i + L_ttft, is
   relegated for good. Relegated requests stay in the queue, after every other one.
2. Order the prefill queue by (relegated, a_i + L_ttft + κ·r_i), then arrival and id.
3. Decodes first, one token each.
4. Dynamic chunk: N is the largest entry of the menu with safety·T̂(N) ≤ the smallest slack
   of the decodes admitted now; the smallest entry if that slack is ≤ 0 or no entry fits; the
   largest if no decode is admitted. The prefills fill N − |D| tokens greedily down the queue.
5. `observe`: θ ← decay·θ + (1 − decay)·(prefill tokens of the plan / its latency).

Where we chose differently from the reference, and why: docs/algorithms/policies.md,
"QoServe beside its reference".
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import attrs

from slidingpolicy import _arguments, _validate
from slidingpolicy.errors import InvalidRecordError
from slidingpolicy.pricing.model import LatencyPredictor
from slidingpolicy.pricing.queue import PricedQueue
from slidingpolicy.records.plan import BatchPlan, PlanBranch
from slidingpolicy.records.request import Request
from slidingpolicy.records.state import SchedulerState
from slidingpolicy.stages.admit import admit
from slidingpolicy.stages.assemble import greedy_plan

NAME = "qoserve"
MENU = (128, 256, 512, 768, 1024, 1280, 1536, 1792, 2048)
"""Total tokens per batch the dynamic chunk picks from (reference TOKEN_SEARCH_SPACE, ≤ 2048)."""


def _ints(value: object) -> object:
    return tuple(value) if isinstance(value, list) else value


@attrs.frozen(slots=True)
class QoServeConfig:
    """QoServe's constants, with the reference's values as defaults.

    - `kappa`: κ of the hybrid key, seconds per remaining prompt token
      (`hybrid_prioritization_param`, 0.008).
    - `menu`: the total token counts the dynamic chunk picks from, increasing.
    - `safety`: the factor on T̂ before comparing it with the decode slack (`pred_thres`, 1.2).
    - `initial_throughput`: θ before any observation, tokens/s
      (`expected_prefill_throughput`, 8500).
    - `decay`: weight θ keeps at each observation (`prefill_throughput_weight_decay`, 0.995).
    """

    kappa: float = 0.008
    menu: tuple[int, ...] = attrs.field(default=MENU, converter=_ints)
    safety: float = 1.2
    initial_throughput: float = 8500.0
    decay: float = 0.995

    def __attrs_post_init__(self) -> None:
        record = "qoserve config"
        _validate.non_negative(record, "kappa", self.kappa)
        _validate.positive(record, "safety", self.safety)
        _validate.positive(record, "initial_throughput", self.initial_throughput)
        decay = _validate.non_negative(record, "decay", self.decay)
        if decay > 1.0:
            raise InvalidRecordError(record, "decay", f"={decay} must be <= 1")
        if not isinstance(self.menu, tuple) or not self.menu:
            raise InvalidRecordError(record, "menu", f"must be a non-empty tuple, got {self.menu}")
        for j, entry in enumerate(self.menu):
            _validate.integer(record, f"menu[{j}]", entry, 1)
        if any(b <= a for a, b in zip(self.menu, self.menu[1:], strict=False)):
            raise InvalidRecordError(record, "menu", f"={self.menu} must be increasing")


@attrs.frozen(slots=True)
class QoServeState:
    """θ, the expected prefill throughput (tokens/s), and the ids relegated so far (sorted)."""

    throughput: float
    relegated: tuple[str, ...] = ()

    def __attrs_post_init__(self) -> None:
        _validate.positive("qoserve state", "throughput", self.throughput)


def misses_ttft(request: Request, now: float, throughput: float) -> bool:
    """The relegation condition: not started, and now + r_i/θ > a_i + L_ttft."""
    finish = now + request.remaining_prefill / throughput
    return request.prefilled == 0 and finish > request.arrival + request.ttft_slo


def relegate(
    requests: Iterable[Request], previous: Iterable[str], now: float, throughput: float
) -> frozenset[str]:
    """The live ids relegated before, plus every request meeting the condition now (only a
    request not started can: the condition is not evaluated for the others)."""
    before = frozenset(previous)
    return frozenset(
        r.id
        for r in requests
        if r.id in before or (r.prefilled == 0 and misses_ttft(r, now, throughput))
    )


def hybrid_key(
    request: Request, relegated: frozenset[str], kappa: float
) -> tuple[bool, float, float, str]:
    """(relegated, a_i + L_ttft + κ·r_i), then arrival and id."""
    return (
        request.id in relegated,
        request.arrival + request.ttft_slo + kappa * request.remaining_prefill,
        request.arrival,
        request.id,
    )


def dynamic_chunk(
    priced: PricedQueue, decodes: Sequence[Request], now: float, cap: int, config: QoServeConfig
) -> int:
    """N: the largest menu entry with safety·T̂(N) ≤ min decode slack (see the module doc)."""
    menu = config.menu
    if not decodes:
        return menu[-1]
    slack = min(d.deadline for d in decodes) - now
    if slack <= 0.0:
        return menu[0]
    top = min(cap, priced.total)
    fits = [
        n
        for n in menu
        if config.safety * priced.price(0, min(max(0, n - len(decodes)), top)) <= slack
    ]
    return fits[-1] if fits else menu[0]


@attrs.frozen(slots=True)
class QoServe:
    """The QoServe baseline over our predictor's T̂."""

    predictor: LatencyPredictor
    config: QoServeConfig = attrs.field(factory=QoServeConfig)
    name: str = NAME

    def __attrs_post_init__(self) -> None:
        record = f"policy {self.name!r}"
        _validate.instance(record, "predictor", self.predictor, LatencyPredictor)
        _validate.instance(record, "config", self.config, QoServeConfig)

    @property
    def token_budget(self) -> int:
        """The menu's largest entry."""
        return self.config.menu[-1]

    def init(self) -> QoServeState:
        """θ at its initial value, nothing relegated."""
        return QoServeState(self.config.initial_throughput)

    def plan(self, pstate: QoServeState, state: SchedulerState) -> tuple[BatchPlan, QoServeState]:
        """Relegate, order, admit the decodes, pick N from the menu, fill N − |D| tokens."""
        _validate.instance(f"policy {self.name!r}", "pstate", pstate, QoServeState)
        _validate.instance(f"policy {self.name!r}", "state", state, SchedulerState)
        now = state.now
        relegated = relegate(state.requests, pstate.relegated, now, pstate.throughput)
        kappa = self.config.kappa
        queue = sorted(state.prefill_candidates, key=lambda r: hybrid_key(r, relegated, kappa))
        admission = admit(state, self.token_budget)
        cap = admission.prefill_cap
        priced = PricedQueue.of(self.predictor, admission.decodes, queue, reach=cap)
        total = dynamic_chunk(priced, admission.decodes, now, cap, self.config)
        prefill = total - len(admission.decodes)
        plan = greedy_plan(priced, admission, queue, prefill, PlanBranch.WHOLE, self.name)
        return plan, attrs.evolve(pstate, relegated=tuple(sorted(relegated)))

    def observe(
        self, pstate: QoServeState, state: SchedulerState, plan: BatchPlan, latency: float
    ) -> QoServeState:
        """Fold the plan's prefill throughput into θ (exponential average).

        A plan without prefill tokens carries no throughput to observe, nor does a latency
        so close to zero that the throughput it implies is not a finite number.
        """
        latency = _arguments.observation(self.name, pstate, QoServeState, state, plan, latency)
        if plan.prefill_budget == 0 or latency == 0.0:
            return pstate
        decay = self.config.decay
        theta = decay * pstate.throughput + (1.0 - decay) * (plan.prefill_budget / latency)
        return attrs.evolve(pstate, throughput=theta) if math.isfinite(theta) else pstate

    def observe_decodes(
        self, pstate: QoServeState, decodes: Sequence[Request], latencies: Sequence[float]
    ) -> QoServeState:
        """Decode-only iterations carry no prefill throughput: θ is unchanged."""
        _validate.instance(f"policy {self.name!r}", "pstate", pstate, QoServeState)
        _arguments.decode_run("observe_decodes", decodes, latencies)
        return pstate
