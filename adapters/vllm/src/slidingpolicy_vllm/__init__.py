"""slidingpolicy-vllm: run SlidingServe, or any registered slidingpolicy scheduler, in vLLM.

`python -m slidingpolicy_vllm serve MODEL --scheduler-cls
slidingpolicy_vllm.AsyncSlidingScheduler` (vLLM's own command line, which also runs under the
CPU wheel; or `SlidingScheduler` without async scheduling); settings in `--additional-config
'{"slidingpolicy": {...}}'` (see `AdapterConfig`).

The schedulers and the guard import vLLM, so they are imported on first use: vLLM imports
prometheus_client, which must find the PROMETHEUS_MULTIPROC_DIR that `__main__` sets first.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from slidingpolicy_vllm.config import AdapterConfig

if TYPE_CHECKING:
    from slidingpolicy_vllm.guard import UnsupportedVllmError, check_vllm
    from slidingpolicy_vllm.scheduler import AsyncSlidingScheduler, SlidingScheduler

_LAZY = {
    "AsyncSlidingScheduler": "scheduler",
    "SlidingScheduler": "scheduler",
    "UnsupportedVllmError": "guard",
    "check_vllm": "guard",
}

__all__ = [
    "AdapterConfig",
    "AsyncSlidingScheduler",
    "SlidingScheduler",
    "UnsupportedVllmError",
    "check_vllm",
]


def __getattr__(name: str) -> Any:
    """The schedulers and the guard, from their modules, imported on first use."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
