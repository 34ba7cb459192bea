"""A policy bound to transformers' continuous batching: the scheduler type to name in the
engine's configuration, and the SLOs of the requests added through it.

transformers builds its scheduler from a name (`ContinuousBatchingConfig.scheduler_type`,
looked up in `SCHEDULER_MAPPING`) and hands it nothing of ours, so a `Binding` registers a
`SlidingScheduler` subclass of its own under a name of its own, which reads the binding's
settings and SLO book. A request's SLOs are given when it is added (`add_request`), checked
there (`slidingpolicy.read_slo`: an invalid value is refused with its key named), and kept
until the request finishes.

    binding = Binding(AdapterConfig(policy="slidingserve+", ttft_slo=1.5, tbt_slo=0.05))
    manager = model.init_continuous_batching(
        generation_config=config, continuous_batching_config=binding.engine_config(num_blocks=512)
    )
    manager.start()
    binding.add_request(manager, prompt_ids, max_new_tokens=64, ttft_slo=2.0)
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Mapping
from typing import Any, ClassVar

import attrs
from slidingpolicy import InvalidRecordError, Policy, Slo, read_slo
from slidingpolicy.embedding import AdapterConfig as SharedConfig
from transformers import ContinuousBatchingConfig
from transformers.generation.continuous_batching.scheduler import SCHEDULER_MAPPING

from slidingpolicy_transformers.guard import check_transformers
from slidingpolicy_transformers.scheduler import SlidingScheduler

_NUMBERS = itertools.count()


@attrs.frozen(slots=True)
class AdapterConfig(SharedConfig):
    """The adapter's settings (`slidingpolicy.embedding.AdapterConfig`)."""

    RECORD: ClassVar[str] = "transformers adapter config"


class SloBook:
    """The SLOs of the requests added through a binding, by request id (thread-safe: requests
    are added on the caller's thread, read on the engine's)."""

    def __init__(self, default: Slo) -> None:
        self.default = default
        self._slos: dict[str, Slo] = {}
        self._lock = threading.Lock()

    def put(self, request_id: str, slo: Slo) -> None:
        """Keep `slo` for `request_id` until it is forgotten."""
        with self._lock:
            self._slos[request_id] = slo

    def get(self, request_id: str) -> Slo:
        """The request's SLOs, the default for a request added without them."""
        return self._slos.get(request_id, self.default)

    def forget(self, request_id: str) -> None:
        """Drop the request's SLOs (it finished or was cancelled)."""
        with self._lock:
            self._slos.pop(request_id, None)

    def __len__(self) -> int:
        return len(self._slos)


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
        if config.options.get("give_up_after") is not None:
            raise InvalidRecordError(
                "adapter config",
                "options",
                "give_up_after: this adapter cannot finish a request early yet (the vLLM "
                "adapter can); leave it unset",
            )
        self.policy: Policy[Any] = config.build_policy() if policy is None else policy
        """The policy that plans: `config`'s registered one, or `policy` when given (a policy
        of your own, outside the registry)."""
        self.token_budget = self.policy.token_budget
        self.slos = SloBook(config.default_slo)
        self.scheduler: SlidingScheduler | None = None
        """The engine's live scheduler, once the engine has built it."""
        self.scheduler_type = f"slidingpolicy-{next(_NUMBERS)}"
        bound: type[SlidingScheduler] = type(
            "BoundSlidingScheduler", (SlidingScheduler,), {"binding": self}
        )
        SCHEDULER_MAPPING[self.scheduler_type] = bound

    def attach(self, scheduler: SlidingScheduler) -> None:
        """Called by the scheduler the engine builds."""
        self.scheduler = scheduler

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
        if not isinstance(budget, int) or budget < self.token_budget:
            raise InvalidRecordError(
                self.config.RECORD,
                "max_batch_tokens",
                f"={budget!r}: policy {self.config.policy!r} plans up to {self.token_budget} "
                "tokens a step; raise max_batch_tokens or lower the policy's budget option",
            )
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
        **kwargs: Any,
    ) -> str:
        """Add a request to `manager` (a `ContinuousBatchingManager` running this binding's
        scheduler) with its SLOs; the defaults for those left None. An invalid SLO raises
        `InvalidRecordError` naming its key, and the request is not added."""
        given = {"ttft_slo": ttft_slo, "tbt_slo": tbt_slo, "protected": protected}
        slo = read_slo({k: v for k, v in given.items() if v is not None}, self.slos.default)
        request_id = request_id or f"{self.scheduler_type}-request-{next(_NUMBERS)}"
        self.slos.put(request_id, slo)
        added = manager.add_request(input_ids, request_id=request_id, **kwargs)
        if added is None:
            self.slos.forget(request_id)
            raise RuntimeError(f"the engine refused request {request_id!r} (it is stopping)")
        return str(added)
