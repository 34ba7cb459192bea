"""The single-step baseline and the ablations of Table 4: configurations of SlidingServe.

Each variant is SlidingServe with some switches fixed, the way an optax alias is a chain of
the same transformations:

| name                  | order | window  | constructor |
|-----------------------|-------|---------|-------------|
| `greedy`              | MLPS  | 1 (eq. 3) | off       |
| `sarathi-edf+sc`      | EDF   | 2       | off         |
| `sarathi-edf+sc+mlps` | MLPS  | 2       | off         |
| `slidingserve`        | MLPS  | 2       | on          |
| `slidingserve+`       | MLPS by deadline, urgent last | 2 | on    |

`slidingserve` is the paper's algorithm with only the engineering decisions where the paper
is silent (latency margin, no deferral, monotone predictor); `slidingserve+` is the
project's recommended configuration (docs/decisions.md, "The recommended configuration").

Every other knob of `SlidingConfig` keeps its default unless the caller sets it.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

import attrs

from slidingpolicy.errors import InvalidRecordError
from slidingpolicy.policies.slidingserve import SlidingServe
from slidingpolicy.pricing.model import LatencyPredictor
from slidingpolicy.records.config import SlidingConfig

FIXED: MappingProxyType[str, MappingProxyType[str, object]] = MappingProxyType(
    {
        "greedy": MappingProxyType({"window": 1, "constructor": False}),
        "sarathi-edf+sc": MappingProxyType({"order": "edf", "constructor": False}),
        "sarathi-edf+sc+mlps": MappingProxyType({"order": "mlps", "constructor": False}),
        "slidingserve": MappingProxyType({}),
        "slidingserve+": MappingProxyType({"level_order": "deadline", "urgent_first": False}),
    }
)
"""The `SlidingConfig` fields each variant fixes."""

VARIANT_SUMMARIES: MappingProxyType[str, str] = MappingProxyType(
    {
        "greedy": "one-step SLO chunking (eq. 3): MLPS, largest chunk in T_cur",
        "sarathi-edf+sc": "ablation: EDF order + SlidingChunker (two-iteration window)",
        "sarathi-edf+sc+mlps": "ablation: MLPS + SlidingChunker, no BatchConstructor",
        "slidingserve": "the paper's: MLPS, SlidingChunker, BatchConstructor",
        "slidingserve+": "recommended: MLPS by deadline, hopeless requests last",
    }
)
"""One line on each variant, in the order of `FIXED`."""

OPTIONS: tuple[str, ...] = tuple(field.name for field in attrs.fields(SlidingConfig))
"""Every `SlidingConfig` field; a variant accepts those it does not fix."""


def variant_options(name: str) -> tuple[str, ...]:
    """The `SlidingConfig` fields variant `name` lets the caller set."""
    return tuple(option for option in OPTIONS if option not in FIXED[name])


def sliding_variant(name: str, predictor: LatencyPredictor, **options: Any) -> SlidingServe:
    """SlidingServe configured as variant `name`, with `options` for the knobs it leaves free."""
    for option in options:
        if option in FIXED[name]:
            raise InvalidRecordError(
                f"policy {name!r}", option, f"is fixed to {FIXED[name][option]!r} by this variant"
            )
    config = attrs.evolve(SlidingConfig(), **{**options, **FIXED[name]})
    return SlidingServe(predictor, config, name=name)
