"""The router registry: every router by name, built from its keyword options.

The same protocol as the policies' (`policies.registry`): a name, a line on what it does,
options whose types are read off the factory's annotations and checked before it sees them
(`policies.option_types`), each documented by a "- `option`: meaning" line of the factory's
docstring (`policies.option_docs`), and `register` for a router of your own. A label names a
configured router on the command line, ``slo-aware[notice=true]`` (`policies.labels`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from slidingpolicy.errors import InvalidRecordError, SlidingPolicyError, UnknownNameError
from slidingpolicy.policies.labels import Options, parse_label, plain_name
from slidingpolicy.policies.option_docs import OptionDoc, field_meanings
from slidingpolicy.policies.option_types import check_options, option_types
from slidingpolicy.routing.least_tokens import LeastTokens
from slidingpolicy.routing.power_of_two import PowerOfTwo
from slidingpolicy.routing.round_robin import RoundRobin
from slidingpolicy.routing.router import Router
from slidingpolicy.routing.slo_aware import SloAware


@attrs.frozen(slots=True)
class RouterEntry:
    """How to build one registered router, the keyword options it takes, a line on it, and
    the type of each option its factory annotates."""

    build: Callable[..., Router]
    options: tuple[str, ...]
    summary: str
    types: Mapping[str, Any] = attrs.field(factory=dict)


def _entry(factory: Callable[..., Router], options: tuple[str, ...], summary: str) -> RouterEntry:
    return RouterEntry(factory, options, summary, option_types(factory, options))


_REGISTRY: dict[str, RouterEntry] = {
    "round-robin": _entry(RoundRobin, (), "each replica in turn, by id"),
    "power-of-two": _entry(
        PowerOfTwo, (), "Ray Serve's default: the shorter queue of two replicas drawn at random"
    ),
    "least-tokens": _entry(LeastTokens, (), "the replica with the fewest prompt tokens to prefill"),
    "slo-aware": _entry(
        SloAware,
        ("notice", "pick"),
        "the earliest predicted first token where a request is served well; notice if all late",
    ),
}
"""Every router by name: ours, then those registered in this process, in order."""

SHIPPED = frozenset(_REGISTRY)
"""The names of the routers shipped with the library."""


def register(
    name: str, factory: Callable[..., Router], options: tuple[str, ...] = (), summary: str = ""
) -> None:
    """Register `factory(**options)` as the router `name`, for `by_name`, `names`, `summary`
    and the command line's ``--router 'name[key=value]'``. `options` are the keyword
    parameters of `factory` a caller may set (documented and typed as a policy's options
    are). Raises `InvalidRecordError` naming the argument when `name` is taken or not a
    plain name, or an option is not a parameter of `factory`."""
    record = f"router {name!r}"
    if not plain_name(name):
        raise InvalidRecordError(record, "name", "must be a plain name, without [],= or spaces")
    if not callable(factory):
        raise InvalidRecordError(record, "factory", f"must be callable, got {factory!r}")
    if name in _REGISTRY:
        raise InvalidRecordError(record, "name", "is taken: every router has its own name")
    parameters = inspect.signature(factory).parameters
    open_ended = any(p.kind is p.VAR_KEYWORD for p in parameters.values())
    for option in options:
        if option not in parameters and not open_ended:
            raise InvalidRecordError(record, option, "is not a parameter of its factory")
    _REGISTRY[name] = _entry(factory, options, summary)


def options_of(name: str) -> tuple[OptionDoc, ...]:
    """The options of the router registered as `name`, each with its default (its factory's
    signature) and its meaning (its factory's "- `option`: meaning" docstring lines)."""
    entry = entry_of(name)
    meanings = field_meanings(entry.build)
    parameters = inspect.signature(entry.build).parameters
    return tuple(
        OptionDoc(o, parameters[o].default if o in parameters else None, meanings.get(o, ""))
        for o in entry.options
    )


def names() -> tuple[str, ...]:
    """Every router, ours first."""
    return tuple(_REGISTRY)


def entry_of(name: str) -> RouterEntry:
    """The registry's entry for `name`; `UnknownNameError` listing the known ones if none."""
    entry = _REGISTRY.get(name)
    if entry is None:
        raise UnknownNameError("router", str(name), names())
    return entry


def summary(name: str) -> str:
    """One line on what the router registered as `name` does."""
    return entry_of(name).summary


def by_name(name: str, **options: Any) -> Router:
    """The router registered as `name` with its keyword `options`. Raises `UnknownNameError`
    for an unknown name and `InvalidRecordError` naming the option for one it does not take,
    a value of another type than its annotation, or one it cannot hold."""
    entry = entry_of(name)
    record = f"router {name!r}"
    for option in options:
        if option not in entry.options:
            accepted = ", ".join(entry.options) or "none"
            raise InvalidRecordError(record, option, f"is not one of its options ({accepted})")
    check_options(record, options, entry.types)
    try:
        router = entry.build(**options)
    except SlidingPolicyError:
        raise
    except Exception as error:
        given = ", ".join(f"{k}={v!r}" for k, v in options.items()) or "factory"
        problem = f"raised {type(error).__name__}: {error}"
        raise InvalidRecordError(record, given, problem) from error
    if getattr(router, "name", None) != name:
        raise InvalidRecordError(
            record,
            "name",
            f"={getattr(router, 'name', None)!r}: its factory must build a router so named",
        )
    return router


def from_label(text: str) -> tuple[Router, Options]:
    """The router a label names (``name`` or ``name[key=value,...]``) and its options."""
    name, options = parse_label(text, "router")
    return by_name(name, **dict(options)), options
