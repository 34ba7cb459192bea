"""The start-up guard: refuse, in one line, a transformers whose scheduler hooks the adapter
cannot trust.

The adapter relies on private parts of continuous batching's `Scheduler`: the queues
(`active_requests`, `waiting_requests`, `waiting_requests_order`, `block_new_requests`),
`_process_candidates` (budgets, KV allocation and the split of a chunk, for the requests
given) and `_cleanup_waiting_queue`; and on the batch processor calling
`clear_cancelled_requests` first when it prepares a step, then `schedule_batch`, which is
how the adapter tells when the previous step's output was applied. They change between minor
releases, so only the series the adapter was tested on are accepted.
"""

from __future__ import annotations

import inspect

import transformers
from slidingpolicy.embedding import check_attributes as check_scheduler_attributes
from slidingpolicy.embedding import check_hook, check_series
from transformers.generation.continuous_batching import continuous_api
from transformers.generation.continuous_batching.scheduler import Scheduler

SUPPORTED_SERIES = ((5, 17), (5, 23))
"""transformers major.minor series the adapter is tested on (5.17.0, 5.23.0)."""

PROCESS = "_process_candidates"
PROCESS_PARAMETERS = (
    "self",
    "candidates",
    "token_budget",
    "cache_budget",
    "request_ids_to_remove_from_waiting",
)

PREPARE_ORDER = ("self.scheduler.clear_cancelled_requests()", "self.scheduler.schedule_batch(")
"""What `ContinuousBatchProcessor.prepare_next_batch` calls, in this order."""

ATTRIBUTES = (
    "active_requests",
    "waiting_requests",
    "waiting_requests_order",
    "block_new_requests",
    "starved_requests",
    "max_requests_per_batch",
    "cache",
)


class UnsupportedTransformersError(RuntimeError):
    """The installed transformers is not one the adapter can drive; the message says why."""


def check_transformers(
    version: str = transformers.__version__, scheduler: type[Scheduler] = Scheduler
) -> None:
    """Raise `UnsupportedTransformersError` unless `version` is a tested series and the hooks
    are as the adapter knows them."""
    error = UnsupportedTransformersError
    check_series("slidingpolicy-transformers", "transformers", version, SUPPORTED_SERIES, error)
    check_hook(f"transformers {version}", scheduler, PROCESS, PROCESS_PARAMETERS, error)
    if not hasattr(scheduler, "_cleanup_waiting_queue"):
        raise UnsupportedTransformersError(
            f"transformers {version}: Scheduler has no _cleanup_waiting_queue()"
        )
    source = inspect.getsource(continuous_api.ContinuousBatchProcessor.prepare_next_batch)
    places = [source.find(call) for call in PREPARE_ORDER]
    if min(places) < 0 or places != sorted(places):
        raise UnsupportedTransformersError(
            f"transformers {version}: prepare_next_batch() no longer calls {PREPARE_ORDER[0]} "
            f"before {PREPARE_ORDER[1]}..): the adapter could not time the steps"
        )


def check_attributes(scheduler: Scheduler) -> None:
    """Raise `UnsupportedTransformersError` if a built scheduler lacks what the adapter reads."""
    engine = f"transformers {transformers.__version__}"
    check_scheduler_attributes(engine, scheduler, ATTRIBUTES, UnsupportedTransformersError)
