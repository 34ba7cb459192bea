"""The online predictor (eq. 6, refitted): any policy that prices with a predictor, refitted as
it runs.

`Online(inner, config)` keeps the statistics of every batch the policy ran with its measured
latency, and every `refit_every` observations refits the predictor from them, with the inner
policy's offline predictor, scaled to the data, as the prior (`fit.solve`). Nothing here is
specific to SlidingServe: the inner policy plans with whatever predictor the state holds.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Generic, Protocol, TypeVar, cast

import attrs
import numpy as np

from slidingpolicy import _validate
from slidingpolicy.errors import InvalidRecordError
from slidingpolicy.policy import DecodeRunObserver, Policy
from slidingpolicy.pricing.features import (
    DECODE,
    FloatArray,
    batch_features,
    decode_terms,
    tile_count,
)
from slidingpolicy.pricing.fit import PredictorStats, solve
from slidingpolicy.pricing.model import LatencyPredictor
from slidingpolicy.records.plan import BatchPlan
from slidingpolicy.records.request import Request
from slidingpolicy.records.state import SchedulerState

S = TypeVar("S")
OPTIONS = ("refit_every", "forgetting", "prior_weight")
"""The keyword options of `by_name` that wrap a policy in `Online`."""


class Priced(Policy[S], DecodeRunObserver[S], Protocol):
    """A policy that prices batches with a predictor it holds (an attrs record field) and
    observes decode runs itself."""

    @property
    def predictor(self) -> LatencyPredictor:
        """The predictor its plans price with."""
        ...


@attrs.frozen(slots=True)
class OnlineConfig:
    """How the online predictor learns.

    - `refit_every`: refit after this many observations.
    - `forgetting`: weight kept by old observations at each new one (1.0 = keep all).
    - `prior_weight`: how many observations the offline predictor, scaled to the data, counts
      for in a refit (`fit.solve`; 0 = the data alone). 200, one refit period: from the first
      refit on, the engine's batches weigh at least as much as the prior.
    """

    refit_every: int = 200
    forgetting: float = 1.0
    prior_weight: float = 200.0

    def __attrs_post_init__(self) -> None:
        record = "online config"
        _validate.integer(record, "refit_every", self.refit_every, 1)
        if _validate.positive(record, "forgetting", self.forgetting) > 1.0:
            raise InvalidRecordError(record, "forgetting", f"={self.forgetting} must be <= 1")
        _validate.non_negative(record, "prior_weight", self.prior_weight)


@attrs.frozen(slots=True)
class OnlineState(Generic[S]):
    """The inner policy as it plans now (with the latest predictor), its state, the
    statistics since the start and the observations since the last refit."""

    policy: Priced[S]
    inner: S
    stats: PredictorStats
    since_refit: int = 0

    @property
    def predictor(self) -> LatencyPredictor:
        """The predictor the plans price with now."""
        return self.policy.predictor


@attrs.frozen(slots=True)
class Online(Generic[S]):
    """`inner`, with its predictor refitted online (module docstring)."""

    inner: Priced[S]
    config: OnlineConfig = attrs.field(factory=OnlineConfig)

    def __attrs_post_init__(self) -> None:
        _validate.instance("online policy", "config", self.config, OnlineConfig)
        if not isinstance(getattr(self.inner, "predictor", None), LatencyPredictor):
            raise InvalidRecordError(
                "online policy", "inner", "must be a policy that holds a LatencyPredictor"
            )
        if not callable(getattr(self.inner, "observe_decodes", None)):
            raise InvalidRecordError(
                "online policy",
                "inner",
                "must observe decode runs itself (a DecodeRunObserver), as Online does",
            )

    @property
    def name(self) -> str:
        """The inner policy's name."""
        return self.inner.name

    @property
    def token_budget(self) -> int:
        """The inner policy's budget."""
        return self.inner.token_budget

    def init(self) -> OnlineState[S]:
        """The inner policy with its offline predictor, and no observation yet."""
        tile = self.inner.predictor.tile
        return OnlineState(self.inner, self.inner.init(), PredictorStats.empty(tile))

    def plan(self, pstate: OnlineState[S], state: SchedulerState) -> tuple[BatchPlan, Any]:
        """The inner policy's plan, priced with the latest predictor."""
        self._own(pstate)
        plan, inner = pstate.policy.plan(pstate.inner, state)
        return plan, attrs.evolve(pstate, inner=inner)

    def observe(
        self, pstate: OnlineState[S], state: SchedulerState, plan: BatchPlan, latency: float
    ) -> OnlineState[S]:
        """Add (batch, latency) to the statistics; refit every `refit_every` observations."""
        self._own(pstate)
        pstate = attrs.evolve(
            pstate, inner=pstate.policy.observe(pstate.inner, state, plan, latency)
        )
        if not plan.allocations:
            return pstate
        chunks = np.array([a.tokens for a in plan.allocations], dtype=np.int64)
        contexts = np.array(
            [_context(state, a.request_id) for a in plan.allocations], dtype=np.int64
        )
        x, scenario = batch_features(chunks, contexts, self.inner.predictor.tile)
        return self._learn(pstate, x, scenario, latency)

    def observe_decodes(
        self, pstate: OnlineState[S], decodes: Sequence[Request], latencies: Sequence[float]
    ) -> OnlineState[S]:
        """Observe each decode-only iteration in turn (its features in closed form)."""
        self._own(pstate)
        inner = pstate.policy.observe_decodes(pstate.inner, decodes, latencies)
        pstate = attrs.evolve(pstate, inner=inner)
        if not decodes:
            return pstate
        count = len(decodes)
        context = sum(d.context_tokens for d in decodes)
        tile = self.inner.predictor.tile
        tiles = () if tile is None else (tile_count(count, tile),)
        for step, latency in enumerate(latencies):
            terms = (*decode_terms(count, context + step * count), *tiles)
            pstate = self._learn(pstate, np.array(terms, dtype=np.float64), DECODE, latency)
        return pstate

    def _own(self, pstate: object) -> None:
        """`pstate` must be a state this policy's `init` began: the inner policy it holds is
        this one's but for the predictor it learned (another's would plan as that one)."""
        _validate.instance(f"policy {self.name!r}", "pstate", pstate, OnlineState)
        held = cast(OnlineState[S], pstate).policy
        if held is not self.inner and not _same_but_predictor(held, self.inner):
            raise InvalidRecordError(
                f"policy {self.name!r}",
                "pstate",
                f"is the state of another policy ({held.name!r}, configured otherwise): "
                "give the state this policy's init made",
            )

    def _learn(
        self, pstate: OnlineState[S], x: FloatArray, scenario: int, latency: float
    ) -> OnlineState[S]:
        """Add one observation; every `refit_every` of them, refit from the statistics since
        the start with the offline predictor as prior (`fit.solve`)."""
        config = self.config
        stats = pstate.stats.add(x, scenario, latency, config.forgetting)
        seen = pstate.since_refit + 1
        if seen < config.refit_every:
            return attrs.evolve(pstate, stats=stats, since_refit=seen)
        offline = self.inner.predictor
        predictor = solve(
            stats, prior=offline, source=offline.source, prior_weight=config.prior_weight
        )
        policy = attrs.evolve(self.inner, predictor=predictor)  # type: ignore[misc]
        return OnlineState(policy, pstate.inner, stats, 0)


def online(policy: Policy[Any], **options: Any) -> Policy[Any]:
    """`policy` learning online with `OnlineConfig(**options)`; `policy` itself when
    `refit_every` is absent or None (then no other option of `OPTIONS` may be given)."""
    if options.get("refit_every") is None:
        for option in options:
            if option != "refit_every":
                raise InvalidRecordError(
                    f"policy {policy.name!r}", option, "needs refit_every (online learning)"
                )
        return policy
    return Online(cast(Priced[Any], policy), OnlineConfig(**options))


def _same_but_predictor(held: object, inner: object) -> bool:
    """Whether two policies (attrs records) are the same but for their predictor (every
    other field equal)."""
    if type(held) is not type(inner) or not attrs.has(type(inner)):
        return False
    return all(
        getattr(held, f.name) == getattr(inner, f.name)
        for f in attrs.fields(cast(Any, type(inner)))
        if f.name != "predictor"
    )


def _context(state: SchedulerState, request_id: str) -> int:
    """u_i of a request the plan allocated (a plan names only live requests)."""
    request = state.request(request_id)
    if request is None:
        raise InvalidRecordError("observation", "plan", f"allocates {request_id!r}, not live")
    return request.context_tokens
