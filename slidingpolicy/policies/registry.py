"""The policy registry: every scheduler by name, built around the engine's predictor.

Ours are registered here; a policy of your own joins them with `register`, in this process,
or by an entry point of the group `slidingpolicy.policies` (its name the policy's, its value
the module that registers it), loaded the first time its name is looked up, in any process
(docs/own-policy.md).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from functools import partial
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import Any

import attrs

from slidingpolicy.errors import (
    InvalidRecordError,
    SlidingPolicyError,
    UnknownNameError,
)
from slidingpolicy.policies.fixed_budget import FixedBudget
from slidingpolicy.policies.labels import plain_name
from slidingpolicy.policies.online import OPTIONS as ONLINE_OPTIONS
from slidingpolicy.policies.online import Online, online
from slidingpolicy.policies.option_types import check_options, option_types
from slidingpolicy.policies.qoserve import QoServe, QoServeConfig
from slidingpolicy.policies.sarathi import sarathi
from slidingpolicy.policies.sarathi_edf import sarathi_edf
from slidingpolicy.policies.variants import (
    DEFAULTS,
    VARIANT_SUMMARIES,
    sliding_variant,
    variant_options,
)
from slidingpolicy.policies.vllm_fcfs import vllm
from slidingpolicy.policy import Policy
from slidingpolicy.pricing.model import LatencyPredictor
from slidingpolicy.records.sliding_config import SlidingConfig


@attrs.frozen(slots=True)
class Entry:
    """How to build one registered policy, the keyword options it accepts, a line on it, the
    record (or builder) whose docstring says what each option means (`policies.option_docs`),
    and the defaults it sets in place of that record's."""

    build: Callable[..., Policy[Any]]
    options: tuple[str, ...]
    summary: str
    documented_by: object = FixedBudget
    learns: bool = False
    """Whether it learns its predictor online unless given `learn=false`."""
    defaults: Mapping[str, object] = attrs.field(factory=dict)
    types: Mapping[str, Any] = attrs.field(factory=dict)
    """The type of each option its factory annotates (`option_types`), checked by `by_name`."""


def qoserve(predictor: LatencyPredictor, **options: Any) -> QoServe:
    """QoServe with `options` overriding fields of `QoServeConfig`."""
    return QoServe(predictor, QoServeConfig(**options))


GROUP = "slidingpolicy.policies"
"""The entry-point group of the policies other packages register."""
RESERVED = ("all", "native")
"""Names the command line gives another meaning (every policy; the engine's own scheduler)."""

_BUDGET = ("token_budget",)
_REGISTRY: dict[str, Entry] = {
    "vllm": Entry(vllm, _BUDGET, "vLLM v1 default: FCFS, decodes first, 8192-token budget"),
    "sarathi": Entry(sarathi, _BUDGET, "Sarathi-Serve: FCFS, ongoing prefills first, 512 tokens"),
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
"""Every policy by name: ours, then those registered in this process, in order."""

SHIPPED = frozenset(_REGISTRY)
"""The names of the policies shipped with the library."""


def shipped(policy: object) -> bool:
    """Whether `policy` is one the library ships: named as one of ours and built of our
    classes, learning online or not. A policy of your own is not, nor one of ours inside a
    class of yours."""
    if getattr(policy, "name", None) not in SHIPPED:
        return False
    inner = policy.inner if isinstance(policy, Online) else policy
    return all(type(p).__module__.startswith("slidingpolicy.") for p in (policy, inner))


def register(
    name: str,
    factory: Callable[..., Policy[Any]],
    options: tuple[str, ...] = (),
    summary: str = "",
    learns: bool = False,
) -> None:
    """Register `factory(predictor, **options)` as the policy `name`, for `by_name`, `names`,
    `summary`, the command line's ``--policy 'name[key=value]'`` and the engine adapters.

    `options` are the keyword parameters of `factory` a caller may set (each documented by a
    "- `option`: meaning" line of its docstring, its default that of its signature, its type
    that of its annotation: `by_name` refuses a value of another); `learns` whether it learns
    its predictor online unless given ``learn=false``. Registering the same factory (defined
    in the same file) under its name again, with the same options, changes nothing. Raises
    `InvalidRecordError` naming the argument when `name` is taken or not a plain name, or an
    option is not one of `factory`'s parameters.
    """
    record = f"policy {name!r}"
    _check_name(record, name)
    if not callable(factory):
        raise InvalidRecordError(record, "factory", f"must be callable, got {factory!r}")
    if not isinstance(options, tuple) or not all(isinstance(o, str) for o in options):
        raise InvalidRecordError(record, "options", f"must be a tuple of names, got {options!r}")
    _check_options(record, factory, options)
    if not isinstance(summary, str):
        raise InvalidRecordError(record, "summary", f"must be a str, got {summary!r}")
    if type(learns) is not bool:
        raise InvalidRecordError(record, "learns", f"must be a bool, got {learns!r}")
    entry = Entry(factory, options, summary, factory, learns, types=option_types(factory, options))
    known = _REGISTRY.get(name)
    if known is None:
        _REGISTRY[name] = entry
    elif name in SHIPPED or not _same(known, entry):
        raise InvalidRecordError(record, "name", "is taken: every policy has its own name")


def _same(known: Entry, entry: Entry) -> bool:
    """Whether two registrations are one: the same options, summary and learning, and a factory
    defined at the same place (the same file loaded as a plugin and imported as a module
    defines it twice)."""
    same_terms = (known.options, known.summary, known.learns) == (
        entry.options,
        entry.summary,
        entry.learns,
    )
    return same_terms and _defined_at(known.build) == _defined_at(entry.build)


def _defined_at(factory: Callable[..., object]) -> object:
    """The file (resolved) and qualified name that define `factory`; itself when it has none
    (a `functools.partial`, a builtin)."""
    try:
        return Path(inspect.getfile(factory)).resolve(), factory.__qualname__
    except (TypeError, AttributeError, OSError):
        return factory


def _check_name(record: str, name: object) -> None:
    """A name `register` takes: a plain label (no options, commas or spaces), not reserved."""
    if not isinstance(name, str):
        raise InvalidRecordError(record, "name", "must be a str")
    if not plain_name(name) or name in RESERVED:
        reserved = " or ".join(RESERVED)
        raise InvalidRecordError(
            record, "name", f"must be a plain name, without [],= or spaces, and not {reserved}"
        )


def _check_options(record: str, factory: Callable[..., object], options: tuple[str, ...]) -> None:
    """Each option a keyword parameter of `factory` (any, if it takes ``**options``), and none
    of the online learner's, which every policy takes already."""
    parameters = inspect.signature(factory).parameters.values()
    named = {p.name for p in parameters if p.kind is not p.VAR_KEYWORD}
    open_ended = any(p.kind is p.VAR_KEYWORD for p in parameters)
    for option in options:
        if option in ONLINE_OPTIONS:
            raise InvalidRecordError(record, option, "is an option of every policy already")
        if option not in named and not open_ended:
            raise InvalidRecordError(record, option, "is not a parameter of its factory")


def _entry_points() -> dict[str, EntryPoint]:
    """The installed entry points of `GROUP`, by name."""
    return {point.name: point for point in entry_points(group=GROUP)}


def names() -> tuple[str, ...]:
    """Every policy: the baselines, the variants of SlidingServe, those registered, and those
    installed packages offer by entry point (not loaded until looked up)."""
    installed = (name for name in _entry_points() if name not in _REGISTRY)
    return (*_REGISTRY, *installed)


def entry_of(name: str) -> Entry:
    """The registry's entry for `name`, loading an installed package's entry point of that
    name the first time; `UnknownNameError` (listing the known) if none."""
    entry = _REGISTRY.get(name)
    if entry is None:
        entry = _load(name)
    return entry


def _load(name: str) -> Entry:
    """The entry that loading the entry point `name` of `GROUP` registers."""
    point = _entry_points().get(name)
    if point is None:
        raise UnknownNameError("policy", str(name), names())
    record = f"policy {name!r}"
    try:
        point.load()
    except Exception as error:
        raise InvalidRecordError(
            record, "entry point", f"{point.value!r} failed to load: {error}"
        ) from error
    entry = _REGISTRY.get(name)
    if entry is None:
        raise InvalidRecordError(
            record, "entry point", f"{point.value!r} loaded but registered no policy {name!r}"
        )
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
    `InvalidRecordError` naming the option for an option the policy does not take, a value
    of another type than its factory's annotation, or a value it cannot hold (whatever its
    factory raises, named with the options given).
    """
    entry = entry_of(name)
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
    own = {k: v for k, v in options.items() if k not in learning}
    check_options(f"policy {name!r}", own, entry.types)
    policy = _built(name, entry, predictor, own)
    built = getattr(policy, "name", None)
    if built != name:
        raise InvalidRecordError(
            f"policy {name!r}", "name", f"={built!r}: its factory must build a policy so named"
        )
    return online(policy, entry.learns, **learning)


def _built(
    name: str, entry: Entry, predictor: LatencyPredictor, options: Mapping[str, Any]
) -> Policy[Any]:
    """`entry`'s factory called with `options`; whatever else it raises becomes one
    `InvalidRecordError` naming the policy and the options given (a `SlidingPolicyError`
    names them already)."""
    try:
        return entry.build(predictor, **options)
    except SlidingPolicyError:
        raise
    except Exception as error:
        given = ", ".join(f"{k}={v!r}" for k, v in options.items())
        field, verb = (given, "made its factory raise") if given else ("factory", "raised")
        problem = f"{verb} {type(error).__name__}: {' '.join(str(error).split())}"
        raise InvalidRecordError(f"policy {name!r}", field, problem) from error


def learns(name: str) -> bool:
    """Whether the policy registered as `name` learns online unless told `learn=false`."""
    return entry_of(name).learns
