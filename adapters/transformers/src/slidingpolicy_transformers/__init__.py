"""slidingpolicy-transformers: run SlidingServe, or any registered slidingpolicy scheduler, in
Hugging Face transformers' continuous batching.

`Binding(AdapterConfig(...))` registers the policy as a scheduler type; its `engine_config()`
is the `ContinuousBatchingConfig` to start the engine with, and its `add_request` adds a
request with its SLOs. `python -m slidingpolicy_transformers serve MODEL` serves a model
folder over an OpenAI-compatible streaming API with any arm.
"""

from slidingpolicy_transformers.binding import AdapterConfig, Binding
from slidingpolicy_transformers.guard import UnsupportedTransformersError, check_transformers
from slidingpolicy_transformers.scheduler import SlidingScheduler
from slidingpolicy_transformers.slo_book import SloBook

__all__ = [
    "AdapterConfig",
    "Binding",
    "SlidingScheduler",
    "SloBook",
    "UnsupportedTransformersError",
    "check_transformers",
]
