"""The online predictor (eq. 6, learned): any policy that prices with a predictor, learning it
as it runs.

`Online(inner, config)` gives every batch the policy ran, with its measured latency, to the
learner (`policies.learner`: refits from sufficient statistics with the inner policy's
offline predictor as the prior, and the latency margin calibrated on a window of recent
batches), and plans with the inner policy over the predictor it learned. Nothing here is
specific to SlidingServe: the inner policy plans with whatever predictor the state holds.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Generic, Protocol, TypeVar, cast

import attrs
import numpy as np

from slidingpolicy import _validate
from slidingpolicy.errors import InvalidRecordError
from slidingpolicy.policies import learner as learning
from slidingpolicy.policies.learner import Learner, OnlineConfig
from slidingpolicy.policy import DecodeRunObserver, Policy
from slidingpolicy.pricing.features import batch_features
from slidingpolicy.pricing.model import LatencyPredictor
from slidingpolicy.records.plan import BatchPlan
from slidingpolicy.records.request import Request
from slidingpolicy.records.state import SchedulerState

S = TypeVar("S")
LEARN = "learn"
"""The option that turns online learning on or off (`online`)."""
OPTIONS = (LEARN, *(field.name for field in attrs.fields(OnlineConfig)))
"""The keyword options of `by_name` that concern online learning."""


class Priced(Policy[S], DecodeRunObserver[S], Protocol):
    """A policy that prices batches with a predictor it holds (an attrs record field) and
    observes decode runs itself."""

    @property
    def predictor(self) -> LatencyPredictor:
        """The predictor its plans price with."""
        ...


@attrs.frozen(slots=True)
class OnlineState(Generic[S]):
    """The inner policy as it plans now (over the learned predictor), its state, and the
    learner."""

    policy: Priced[S]
    inner: S
    learner: Learner

    @property
    def predictor(self) -> LatencyPredictor:
        """The predictor the plans price with now (its margin the one in force)."""
        return self.policy.predictor


@attrs.frozen(slots=True)
class Online(Generic[S]):
    """`inner`, with its predictor and margin learned online (module docstring)."""

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
        """The inner policy over its offline predictor, with the cold-start margin."""
        learner = learning.start(self.inner.predictor, self.config)
        return OnlineState(self._over(learner), self.inner.init(), learner)

    def plan(self, pstate: OnlineState[S], state: SchedulerState) -> tuple[BatchPlan, Any]:
        """The inner policy's plan, priced with the learned predictor."""
        self._own(pstate)
        plan, inner = pstate.policy.plan(pstate.inner, state)
        if inner is pstate.inner:
            return plan, pstate
        return plan, attrs.evolve(pstate, inner=inner)

    def observe(
        self, pstate: OnlineState[S], state: SchedulerState, plan: BatchPlan, latency: float
    ) -> OnlineState[S]:
        """Give the batch that ran and its latency to the learner."""
        return self._observe(pstate, state, plan, latency, defer=False)[0]

    def observe_deferring(
        self, pstate: OnlineState[S], state: SchedulerState, plan: BatchPlan, latency: float
    ) -> tuple[OnlineState[S], bool]:
        """`observe`, but a refit it would run is left to the caller (True when one is
        due), which hands the learner over (`hand_over`), refits it off an engine's step
        (`learner.refitted`) and puts the refit in force with `install`."""
        return self._observe(pstate, state, plan, latency, defer=True)

    def hand_over(self, pstate: OnlineState[S]) -> tuple[OnlineState[S], Learner]:
        """`pstate` with its learner's pending rows handed to a refit, and the learner to
        refit (`learner.hand_over`)."""
        self._own(pstate)
        learner = learning.hand_over(pstate.learner)
        return attrs.evolve(pstate, learner=learner), learner

    def install(self, pstate: OnlineState[S], refit: learning.Refit) -> OnlineState[S]:
        """`pstate` planning with a refit done aside (`learner.installed`)."""
        self._own(pstate)
        learner = learning.installed(pstate.learner, refit)
        return OnlineState(self._over(learner), pstate.inner, learner)

    def _observe(
        self,
        pstate: OnlineState[S],
        state: SchedulerState,
        plan: BatchPlan,
        latency: float,
        defer: bool,
    ) -> tuple[OnlineState[S], bool]:
        self._own(pstate)
        inner = pstate.policy.observe(pstate.inner, state, plan, latency)
        if not plan.allocations:
            return (pstate if inner is pstate.inner else attrs.evolve(pstate, inner=inner)), False
        chunks = np.array([a.tokens for a in plan.allocations], dtype=np.int64)
        contexts = np.array(
            [_context(state, a.request_id) for a in plan.allocations], dtype=np.int64
        )
        x, scenario = batch_features(chunks, contexts, self.inner.predictor.tile)
        if not defer:
            learner = learning.observe(pstate.learner, self.config, x, scenario, latency)
            return self._after(pstate, inner, learner), False
        learner, due = learning.observe_deferring(pstate.learner, self.config, x, scenario, latency)
        return self._after(pstate, inner, learner), due

    def observe_decodes(
        self, pstate: OnlineState[S], decodes: Sequence[Request], latencies: Sequence[float]
    ) -> OnlineState[S]:
        """The decode-only iterations given to the learner at once (`learner.observe_decodes`)."""
        self._own(pstate)
        inner = pstate.policy.observe_decodes(pstate.inner, decodes, latencies)
        if not decodes or not latencies:
            return pstate if inner is pstate.inner else attrs.evolve(pstate, inner=inner)
        context = sum(d.context_tokens for d in decodes)
        learner = learning.observe_decodes(
            pstate.learner, self.config, len(decodes), context, latencies
        )
        return self._after(pstate, inner, learner)

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

    def _over(self, learner: Learner) -> Priced[S]:
        """The inner policy over the learner's predictor."""
        return attrs.evolve(self.inner, predictor=learner.predictor)  # type: ignore[misc]

    def _after(self, pstate: OnlineState[S], inner: S, learner: Learner) -> OnlineState[S]:
        """The state with the inner state and the learner after an observation; the inner
        policy rebuilt only when the learner installed a new predictor."""
        if learner.predictor is pstate.learner.predictor:
            return OnlineState(pstate.policy, inner, learner)
        return OnlineState(self._over(learner), inner, learner)


def online(policy: Policy[Any], default: bool, **options: Any) -> Policy[Any]:
    """`policy` learning online with `OnlineConfig(**options)`, or `policy` itself.

    `learn` (an option) says whether it learns: by default it does when `default` is true or
    when any other learning option is given; with `learn=False` no other may be given.
    """
    learn = options.pop(LEARN, None)
    record = f"policy {policy.name!r}"
    if learn is None:
        learn = default or bool(options)
    elif not isinstance(learn, bool):
        raise InvalidRecordError(record, LEARN, f"={learn!r} must be true or false")
    if not learn:
        if options:
            option = next(iter(options))
            raise InvalidRecordError(
                record, option, "tunes online learning, which learn=false turns off"
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
