"""A policy bound to transformers' continuous batching: the scheduler type to name in the
engine's configuration, and the SLOs of the requests added through it.

transformers builds its scheduler from a name (`ContinuousBatchingConfig.scheduler_type`,
looked up in `SCHEDULER_MAPPING`) and hands it nothing of ours, so a `Binding` registers a
`SlidingScheduler` subclass of its own under a name of its own, which reads the binding's
settings and SLO book. A request's SLOs are given when it is added (`add_request`), checked
there by the one reader of SLOs on the wire (`slidingpolicy.embedding.slo_on_wire`: an
invalid value is refused with its key named), and kept until the request finishes. A request
the policy finishes alone (refused, or given up with `give_up_after`) is failed through the
engine's output router with the notice as its error, which its client reads.

    binding = Binding(AdapterConfig(policy="slidingserve+", ttft_slo=1.5, tbt_slo=0.05))
    manager = model.init_continuous_batching(
        generation_config=config, continuous_batching_config=binding.engine_config(num_blocks=512)
    )
    manager.start()
    binding.add_request(manager, prompt_ids, max_new_tokens=64, ttft_slo=2.0)
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import attrs
from slidingpolicy import InvalidRecordError, Policy
from slidingpolicy.embedding import AdapterConfig as SharedConfig
from slidingpolicy.embedding import require_budget, slo_on_wire
from transformers import ContinuousBatchingConfig
from transformers.generation.continuous_batching.requests import RequestState
from transformers.generation.continuous_batching.scheduler import SCHEDULER_MAPPING

from slidingpolicy_transformers.guard import check_transformers
from slidingpolicy_transformers.scheduler import SlidingScheduler
from slidingpolicy_transformers.slo_book import SloBook

_NUMBERS = itertools.count()


@attrs.frozen(slots=True)
class AdapterConfig(SharedConfig):
    """The adapter's settings (`slidingpolicy.embedding.AdapterConfig`)."""

    RECORD: ClassVar[str] = "transformers adapter config"


class Binding:
    """A policy as a scheduler type of transformers' continuous batching: `config`'s, or
    `policy` with `config`'s other settings."""

    def __init__(
        self,
        config: AdapterConfig | SharedConfig | Mapping[str, Any],
        policy: Policy[Any] | None = None,
    ) -> None:
        check_transformers()
        if isinstance(config, Mapping):
            config = AdapterConfig.from_mapping(config)
        self.config = config
        self.policy: Policy[Any] = config.build_policy() if policy is None else policy
        """The policy that plans: `config`'s registered one, or `policy` when given (a policy
        of your own, outside the registry)."""
        self.token_budget = self.policy.token_budget
        self.slos = SloBook(config.default_slo)
        self.scheduler: SlidingScheduler | None = None
        """The engine's live scheduler, once the engine has built it."""
        self.watchers: list[Callable[[SlidingScheduler], None]] = []
        """Called with the scheduler the engine builds, before its first step (to watch or
        prepare its policy's loop, as the conformance suite does)."""
        self.router: Any = None
        """The engine's output router (of the manager requests are added to), through which
        a request finished alone reaches its client."""
        self.scheduler_type = f"slidingpolicy-{next(_NUMBERS)}"
        bound: type[SlidingScheduler] = type(
            "BoundSlidingScheduler", (SlidingScheduler,), {"binding": self}
        )
        SCHEDULER_MAPPING[self.scheduler_type] = bound

    def attach(self, scheduler: SlidingScheduler) -> None:
        """Called by the scheduler the engine builds."""
        self.scheduler = scheduler
        for watch in self.watchers:
            watch(scheduler)

    def fail(self, state: RequestState, notice: str) -> None:
        """Fail a request the policy finished alone: its client gets `notice` as the error."""
        if self.router is not None:
            self.router.fail_and_deliver(state, RuntimeError(notice))

    def engine_config(self, **options: Any) -> ContinuousBatchingConfig:
        """A `ContinuousBatchingConfig` of `options` that runs this binding's scheduler, with
        synchronous batching (a step's output is applied before the next is planned, so that
        its time is measured) and `max_batch_tokens` at least the policy's token budget."""
        for key in ("scheduler_type", "use_async_batching"):
            if key in options:
                raise InvalidRecordError(
                    self.config.RECORD, key, "is set by the binding; leave it out"
                )
        budget = options.setdefault("max_batch_tokens", self.token_budget)
        if not isinstance(budget, int):
            raise InvalidRecordError(
                self.config.RECORD, "max_batch_tokens", f"={budget!r}: not an int"
            )
        require_budget(self.policy, budget, self.config.RECORD, "max_batch_tokens",
                       "raise max_batch_tokens")  # fmt: skip
        return ContinuousBatchingConfig(
            scheduler_type=self.scheduler_type, use_async_batching=False, **options
        )

    def add_request(
        self,
        manager: Any,
        input_ids: list[int],
        request_id: str | None = None,
        *,
        ttft_slo: object = None,
        tbt_slo: object = None,
        protected: object = None,
        slo: object = None,
        **kwargs: Any,
    ) -> str:
        """Add a request to `manager` (a `ContinuousBatchingManager` running this binding's
        scheduler) with its SLOs, as keywords or as the object `slo` (a request's
        ``vllm_xargs`` as it came); the defaults for those left None. An invalid SLO raises
        `InvalidRecordError` naming its key, and the request is not added."""
        given = {"ttft_slo": ttft_slo, "tbt_slo": tbt_slo, "protected": protected}
        keys = {k: v for k, v in given.items() if v is not None}
        carried = {**slo, **keys} if isinstance(slo, Mapping) else keys if slo is None else slo
        read = slo_on_wire(carried, self.slos.default)
        self.router = manager.output_router
        request_id = request_id or f"{self.scheduler_type}-request-{next(_NUMBERS)}"
        self.slos.put(request_id, read)
        added = manager.add_request(input_ids, request_id=request_id, **kwargs)
        if added is None:
            self.slos.forget(request_id)
            raise RuntimeError(f"the engine refused request {request_id!r} (it is stopping)")
        return str(added)
