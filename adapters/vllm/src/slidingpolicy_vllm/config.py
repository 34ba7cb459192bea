"""`AdapterConfig`: which policy runs inside vLLM, with what options, SLO defaults and trace.

vLLM hands a scheduler class nothing but its own `VllmConfig`; the adapter reads its settings
from `additional_config["slidingpolicy"]` (`vllm serve --additional-config '{"slidingpolicy":
{...}}'`), a JSON object whose keys are the fields below.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import attrs
from slidingpolicy import InvalidRecordError, LatencyPredictor, Policy, by_name, default_predictor

RECORD = "vllm adapter config"
SECTION = "slidingpolicy"
"""The key of `VllmConfig.additional_config` the adapter reads."""


def _options(value: object) -> MappingProxyType[str, Any]:
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise InvalidRecordError(RECORD, "options", f"must be an object of names, got {value!r}")
    return MappingProxyType(dict(value))


def _positive(field: str, value: object) -> float:
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise InvalidRecordError(RECORD, field, f"must be a number, got {value!r}")
    if not math.isfinite(value) or value <= 0:
        raise InvalidRecordError(RECORD, field, f"must be finite and > 0, got {value!r}")
    return float(value)


@attrs.frozen(slots=True)
class AdapterConfig:
    """The adapter's settings.

    - `policy`: a registry name (`slidingpolicy.names()`); `options`: its keyword options,
      passed through by name (e.g. `{"max_batch_tokens": 1024}` for slidingserve).
    - `predictor`: a predictor JSON written by `slidingpolicy fit`; None = the packaged
      default (qwen2.5-7b on 2× RTX 3090), which is not calibrated for your hardware.
    - `ttft_slo`, `tbt_slo`: seconds, for requests whose `extra_args` carry none
      (ShareGPT's defaults in the paper: 3 s and 100 ms).
    - `prefill_throughput`: ρ (tokens/s) before the first measured prefill.
    - `check_plans`: run `check_plan` on every plan and let vLLM schedule a step whose plan
      breaks an invariant.
    - `trace`: a JSONL file for one line per step (snapshot, plan, what vLLM ran, measured
      latency: `slidingpolicy_vllm.trace`), read by `slidingpolicy check`.
    """

    policy: str = "slidingserve"
    options: MappingProxyType[str, Any] = attrs.field(factory=dict, converter=_options)
    predictor: str | None = None
    ttft_slo: float = 3.0
    tbt_slo: float = 0.1
    prefill_throughput: float = 8000.0
    check_plans: bool = True
    trace: str | None = None

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.policy, str):
            raise InvalidRecordError(RECORD, "policy", f"must be a str, got {self.policy!r}")
        for field in ("predictor", "trace"):
            value = getattr(self, field)
            if value is not None and (not isinstance(value, str) or not value):
                raise InvalidRecordError(RECORD, field, f"must be a path or null, got {value!r}")
        for field in ("ttft_slo", "tbt_slo", "prefill_throughput"):
            object.__setattr__(self, field, _positive(field, getattr(self, field)))
        if not isinstance(self.check_plans, bool):
            raise InvalidRecordError(
                RECORD, "check_plans", f"must be a bool, got {self.check_plans!r}"
            )

    @classmethod
    def from_mapping(cls, data: object) -> AdapterConfig:
        """The config a JSON object describes; unknown keys are errors that list the known."""
        if not isinstance(data, Mapping):
            raise InvalidRecordError(RECORD, SECTION, f"must be a JSON object, got {data!r}")
        known = [f.name for f in attrs.fields(cls)]
        for key in data:
            if key not in known:
                raise InvalidRecordError(RECORD, str(key), f"is not a field ({', '.join(known)})")
        return cls(**data)

    def load_predictor(self) -> LatencyPredictor:
        """The predictor the policy prices batches with."""
        if self.predictor is None:
            return default_predictor()
        path = Path(self.predictor)
        if not path.is_file():
            raise InvalidRecordError(RECORD, "predictor", f"={self.predictor!r} is not a file")
        return LatencyPredictor.load(path)

    def build_policy(self) -> Policy[Any]:
        """The registered policy `policy` over the predictor, with `options` passed by name."""
        return by_name(self.policy, self.load_predictor(), **self.options)
