"""`AdapterConfig`: which policy runs inside vLLM, with what options, SLO defaults and trace.

vLLM hands a scheduler class nothing but its own `VllmConfig`; the adapter reads its settings
from `additional_config["slidingpolicy"]` (`vllm serve --additional-config '{"slidingpolicy":
{...}}'`), a JSON object whose keys are the fields of `slidingpolicy.embedding.AdapterConfig`,
the settings every engine adapter shares.
"""

from __future__ import annotations

from typing import ClassVar

import attrs
from slidingpolicy.embedding import AdapterConfig as SharedConfig

RECORD = "vllm adapter config"
SECTION = "slidingpolicy"
"""The key of `VllmConfig.additional_config` the adapter reads."""


@attrs.frozen(slots=True)
class AdapterConfig(SharedConfig):
    """The adapter's settings (`slidingpolicy.embedding.AdapterConfig`), named as vLLM's."""

    RECORD: ClassVar[str] = RECORD
