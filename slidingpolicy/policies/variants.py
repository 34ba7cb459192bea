"""The single-step baseline and the ablations of Table 4: configurations of SlidingServe.

Each variant is SlidingServe with some switches fixed, the way an optax alias is a chain of
the same transformations:

| name                  | order | window  | constructor |
|-----------------------|-------|---------|-------------|
| `greedy`              | MLPS  | 1 (eq. 3) | off       |
| `sarathi-edf+sc`      | EDF   | 2       | off         |
| `sarathi-edf+sc+mlps` | MLPS  | 2       | off         |
| `slidingserve`        | MLPS  | 2       | on          |
| `slidingserve+`       | MLPS by deadline | 2 | on    |

`slidingserve+`'s MLPS orders each level by TTFT deadline, then r_i; urgent requests go
after the calm ones; late requests go last, except that once their deadline passed a minute
ago (`late_grace`) they go first a tenth of the time (`late_share`). It also starts a prefill
only with 64 free KV slots per running request (`kv_headroom`), so that a burst does not fill
the cache with prompts and preempt decodes. The late grace and share are its defaults, not
fixed: an operator trades attainment for a shorter wait of late requests by setting them, or
gives hopeless requests up with `give_up_after` (docs/tail.md).

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
from slidingpolicy.records.sliding_config import SlidingConfig

LATE_GRACE = 60.0
"""`slidingserve+`'s late grace G (s): a late request is promoted once its TTFT deadline
passed a minute ago (docs/decisions.md, "Bursts")."""
LATE_SHARE = 0.1
"""`slidingserve+`'s late share f: promoted requests go first a tenth of the time. Served first
all the time, they took the engine from live requests under sustained overload, which then
went late in turn: attainment at 1.25× capacity fell from 94% to 72% (docs/decisions.md)."""
KV_HEADROOM = 64
"""`slidingserve+`'s KV headroom: four 16-token blocks of room per running request (one
block still let a burst into a cache a tenth of the default preempt; tests/policies/
test_bursts.py)."""

FIXED: MappingProxyType[str, MappingProxyType[str, object]] = MappingProxyType(
    {
        "greedy": MappingProxyType({"window": 1, "constructor": False}),
        "sarathi-edf+sc": MappingProxyType({"order": "edf", "constructor": False}),
        "sarathi-edf+sc+mlps": MappingProxyType({"order": "mlps", "constructor": False}),
        "slidingserve": MappingProxyType({}),
        "slidingserve+": MappingProxyType(
            {
                "level_order": "deadline",
                "urgent_first": False,
                "kv_headroom": KV_HEADROOM,
            }
        ),
    }
)
"""The `SlidingConfig` fields each variant fixes."""

DEFAULTS: MappingProxyType[str, MappingProxyType[str, object]] = MappingProxyType(
    {
        "slidingserve+": MappingProxyType({"late_grace": LATE_GRACE, "late_share": LATE_SHARE}),
    }
)
"""The `SlidingConfig` fields a variant sets unless the caller does."""

VARIANT_SUMMARIES: MappingProxyType[str, str] = MappingProxyType(
    {
        "greedy": "one-step SLO chunking (eq. 3): MLPS, largest chunk in T_cur",
        "sarathi-edf+sc": "ablation: EDF order + SlidingChunker (two-iteration window)",
        "sarathi-edf+sc+mlps": "ablation: MLPS + SlidingChunker, no BatchConstructor",
        "slidingserve": "the paper's: MLPS, SlidingChunker, BatchConstructor",
        "slidingserve+": "recommended: MLPS by deadline, hopeless last, late back after 60 s",
    }
)
"""One line on each variant, in the order of `FIXED`."""

OPTIONS: tuple[str, ...] = tuple(field.name for field in attrs.fields(SlidingConfig))
"""Every `SlidingConfig` field; a variant accepts those it does not fix."""


def variant_options(name: str) -> tuple[str, ...]:
    """The `SlidingConfig` fields variant `name` lets the caller set."""
    return tuple(option for option in OPTIONS if option not in FIXED[name])


def sliding_variant(name: str, predictor: LatencyPredictor, **options: Any) -> SlidingServe:
    """SlidingServe configured as variant `name`, with `options` for the knobs it leaves free;
    a value the configuration cannot hold raises `InvalidRecordError` naming the policy."""
    record = f"policy {name!r}"
    for option in options:
        if option in FIXED[name]:
            raise InvalidRecordError(
                record, option, f"is fixed to {FIXED[name][option]!r} by this variant"
            )
    fields = {**DEFAULTS.get(name, {}), **options, **FIXED[name]}
    try:
        config = attrs.evolve(SlidingConfig(), **fields)
    except InvalidRecordError as error:
        raise InvalidRecordError(record, error.field, error.problem) from None
    return SlidingServe(predictor, config, name=name)
