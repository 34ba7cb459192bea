"""What an engine adapter is told: which policy runs (a registered name, options as
``name[key=value,...]`` or a mapping), over which predictor, the SLOs of a request that
carries none, ρ_t before the first measured step, and where the step trace goes.

Every adapter reads the same fields (`AdapterConfig.from_mapping`, from the JSON object its
engine passes on), so that a policy configured for one engine runs unchanged on another.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar

import attrs

from slidingpolicy import _validate
from slidingpolicy.errors import InvalidRecordError, PolicyLabelError
from slidingpolicy.policies import by_name, load_plugins
from slidingpolicy.policies.labels import parse_label
from slidingpolicy.policy import Policy
from slidingpolicy.predictors import default_predictor
from slidingpolicy.pricing import LatencyPredictor
from slidingpolicy.records.slo import Slo


def _plugins(value: object) -> tuple[str, ...]:
    if isinstance(value, (list, tuple)) and all(isinstance(p, str) and p for p in value):
        return tuple(value)
    raise InvalidRecordError(
        "adapter config", "plugins", f"must be a list of modules or .py files, got {value!r}"
    )


def _options(value: object) -> MappingProxyType[str, Any]:
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise InvalidRecordError(
            "adapter config", "options", f"must be an object of names, got {value!r}"
        )
    return MappingProxyType(dict(value))


@attrs.frozen(slots=True)
class AdapterConfig:
    """An adapter's settings.

    - `policy`: a registry name (`slidingpolicy.names()`), or a label ``name[key=value,...]``;
      `options`: more keyword options, by name (e.g. ``{"max_batch_tokens": 1024}``).
    - `predictor`: a predictor JSON written by `slidingpolicy fit`; None = the packaged
      default (qwen2.5-7b on 2× RTX 3090), which is not calibrated for your hardware.
    - `ttft_slo`, `tbt_slo`: seconds, for requests that carry none (ShareGPT's in the
      paper: 3 s and 100 ms).
    - `prefill_throughput`: ρ_t (tokens/s) before the first measured prefill.
    - `check_plans`: run `check_plan` on every plan, and let the engine schedule a step whose
      plan breaks an invariant.
    - `trace`: a JSONL file for one line per step (`slidingpolicy.step_trace`), read by
      `slidingpolicy check` and `fit --trace`.
    - `plugins`: modules (``my_package.policies``) or Python files (an absolute path ending in
      .py) imported before `policy` is looked up, whose import registers policies of your
      own (`slidingpolicy.load_plugins`; an installed entry point needs none).
    """

    RECORD: ClassVar[str] = "adapter config"

    policy: str = "slidingserve"
    options: MappingProxyType[str, Any] = attrs.field(factory=dict, converter=_options)
    predictor: str | None = None
    ttft_slo: float = 3.0
    tbt_slo: float = 0.1
    prefill_throughput: float = 8000.0
    check_plans: bool = True
    trace: str | None = None
    plugins: tuple[str, ...] = attrs.field(default=(), converter=_plugins)

    def __attrs_post_init__(self) -> None:
        record = self.RECORD
        if not isinstance(self.policy, str):
            raise InvalidRecordError(record, "policy", f"must be a str, got {self.policy!r}")
        try:
            name, options = parse_label(self.policy)
        except PolicyLabelError as error:
            raise InvalidRecordError(record, "policy", str(error)) from None
        clash = [key for key, _ in options if key in self.options]
        if clash:
            raise InvalidRecordError(
                record, "options", f"{clash[0]!r} is given in the policy label too"
            )
        object.__setattr__(self, "policy", name)
        object.__setattr__(self, "options", MappingProxyType({**dict(options), **self.options}))
        for field in ("predictor", "trace"):
            value = getattr(self, field)
            if value is not None and (not isinstance(value, str) or not value):
                raise InvalidRecordError(record, field, f"must be a path or null, got {value!r}")
        for field in ("ttft_slo", "tbt_slo"):
            object.__setattr__(self, field, _validate.duration(record, field, getattr(self, field)))
        throughput = _validate.positive(record, "prefill_throughput", self.prefill_throughput)
        object.__setattr__(self, "prefill_throughput", throughput)
        _validate.flag(record, "check_plans", self.check_plans)

    @classmethod
    def from_mapping(cls, data: object) -> AdapterConfig:
        """The config a JSON object describes; unknown keys are errors that list the known."""
        if not isinstance(data, Mapping):
            raise InvalidRecordError(cls.RECORD, "config", f"must be a JSON object, got {data!r}")
        known = [f.name for f in attrs.fields(cls)]
        for key in data:
            if key not in known:
                raise InvalidRecordError(
                    cls.RECORD, str(key), f"is not a field ({', '.join(known)})"
                )
        return cls(**data)

    @property
    def default_slo(self) -> Slo:
        """The SLOs of a request that carries none."""
        return Slo(self.ttft_slo, self.tbt_slo)

    def load_predictor(self) -> LatencyPredictor:
        """The predictor the policy prices batches with."""
        if self.predictor is None:
            return default_predictor()
        path = Path(self.predictor)
        if not path.is_file():
            raise InvalidRecordError(self.RECORD, "predictor", f"={self.predictor!r} is not a file")
        return LatencyPredictor.load(path)

    def build_policy(self) -> Policy[Any]:
        """The registered policy `policy` over the predictor, with `options` passed by name,
        once `plugins` are loaded."""
        load_plugins(self.plugins)
        return by_name(self.policy, self.load_predictor(), **self.options)
