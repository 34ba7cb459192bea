"""slidingpolicy-vllm: run SlidingServe, or any registered slidingpolicy scheduler, in vLLM.

`python -m slidingpolicy_vllm serve MODEL --scheduler-cls
slidingpolicy_vllm.AsyncSlidingScheduler` (vLLM's own command line, which also runs under the
CPU wheel; or `SlidingScheduler` without async scheduling); settings in `--additional-config
'{"slidingpolicy": {...}}'` (see `AdapterConfig`).
"""

from slidingpolicy_vllm.config import AdapterConfig
from slidingpolicy_vllm.guard import UnsupportedVllmError, check_vllm
from slidingpolicy_vllm.scheduler import AsyncSlidingScheduler, SlidingScheduler

__all__ = [
    "AdapterConfig",
    "AsyncSlidingScheduler",
    "SlidingScheduler",
    "UnsupportedVllmError",
    "check_vllm",
]
