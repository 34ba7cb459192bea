"""The policy registry: every scheduler by name, built around the engine's predictor."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from types import MappingProxyType
from typing import Any

import attrs

from slidingpolicy.errors import InvalidRecordError, UnknownNameError
from slidingpolicy.policies.fixed_budget import FixedBudget
from slidingpolicy.policies.online import OPTIONS as ONLINE_OPTIONS
from slidingpolicy.policies.online import online
from slidingpolicy.policies.qoserve import QoServe, QoServeConfig
from slidingpolicy.policies.sarathi import sarathi
from slidingpolicy.policies.sarathi_edf import sarathi_edf
from slidingpolicy.policies.variants import (
    DEFAULTS,
    VARIANT_SUMMARIES,
    sliding_variant,
    variant_options,
)
from slidingpolicy.policies.vllm import vllm
from slidingpolicy.policy import Policy
from slidingpolicy.pricing.model import LatencyPredictor
from slidingpolicy.records.config import SlidingConfig


@attrs.frozen(slots=True)
class Entry:
    """How to build one registered policy, the keyword options it accepts, a line on it, the
    record whose docstring says what each option means (`policies.options`), and the
    defaults it sets in place of that record's."""

    build: Callable[..., Policy[Any]]
    options: tuple[str, ...]
    summary: str
    documented_by: type = FixedBudget
    learns: bool = False
    """Whether it learns its predictor online unless given `learn=false`."""
    defaults: Mapping[str, object] = attrs.field(factory=dict)


def qoserve(predictor: LatencyPredictor, **options: Any) -> QoServe:
    """QoServe with `options` overriding fields of `QoServeConfig`."""
    return QoServe(predictor, QoServeConfig(**options))


_BUDGET = ("token_budget",)
_REGISTRY: MappingProxyType[str, Entry] = MappingProxyType(
    {
        "vllm": Entry(vllm, _BUDGET, "vLLM v1 default: FCFS, decodes first, 8192-token budget"),
        "sarathi": Entry(
            sarathi, _BUDGET, "Sarathi-Serve: FCFS, ongoing prefills first, 512 tokens"
        ),
        "sarathi-edf": Entry(
            sarathi_edf, _BUDGET, "Sarathi-Serve's 512 tokens, prefills by TTFT deadline"
        ),
        "qoserve": Entry(
            qoserve,
            tuple(f.name for f in attrs.fields(QoServeConfig)),
            "QoServe: deadline+κ·r order, menu chunk, eager relegation",
            QoServeConfig,
        ),
        **{
            name: Entry(
                partial(sliding_variant, name),
                variant_options(name),
                summary,
                SlidingConfig,
                learns=True,
                defaults=DEFAULTS.get(name, {}),
            )
            for name, summary in VARIANT_SUMMARIES.items()
        },
    }
)


def names() -> tuple[str, ...]:
    """Every registered policy: the baselines, then the variants of SlidingServe."""
    return tuple(_REGISTRY)


def entry_of(name: str) -> Entry:
    """The registry's entry for `name`; `UnknownNameError` (listing the known) if none."""
    entry = _REGISTRY.get(name)
    if entry is None:
        raise UnknownNameError("policy", str(name), names())
    return entry


def summary(name: str) -> str:
    """One line on what the policy registered as `name` does."""
    return entry_of(name).summary


def by_name(name: str, predictor: LatencyPredictor, **options: Any) -> Policy[Any]:
    """The policy registered as `name`, over `predictor`, with its keyword `options`.

    Every policy also takes `learn` and the options of `learner.OnlineConfig`
    (`refit_every`, `prior_weight`, `cold_margin`, ...). SlidingServe's variants learn their
    predictor and margin online by default, the baselines do not: `learn=False` turns it
    off, `learn=True` (or any learning option) turns it on.

    Raises `UnknownNameError` (listing the known names) for an unknown name, and
    `InvalidRecordError` naming the option for an option the policy does not take or a
    value it cannot hold.
    """
    entry = _REGISTRY.get(name)
    if entry is None:
        raise UnknownNameError("policy", str(name), names())
    if not isinstance(predictor, LatencyPredictor):
        raise InvalidRecordError(
            f"policy {name!r}",
            "predictor",
            f"must be a LatencyPredictor, got {type(predictor).__name__}",
        )
    for option in options:
        if option not in entry.options and option not in ONLINE_OPTIONS:
            accepted = ", ".join((*entry.options, *ONLINE_OPTIONS))
            raise InvalidRecordError(
                f"policy {name!r}", option, f"is not one of its options ({accepted})"
            )
    learning = {k: v for k, v in options.items() if k in ONLINE_OPTIONS}
    policy = entry.build(predictor, **{k: v for k, v in options.items() if k not in learning})
    return online(policy, entry.learns, **learning)


def learns(name: str) -> bool:
    """Whether the policy registered as `name` learns online unless told `learn=false`."""
    return entry_of(name).learns
