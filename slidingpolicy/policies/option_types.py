"""The types of a registered policy's options, read off its factory's annotations, and each
value given checked against its type before the factory sees it: the same one-line error a
record's field check gives (``policy 'least-slack': chunk must be an int, got 'abc'``).

Only what a value from the command line can be is checked (an int, a number, a bool, a str,
None, a `Literal`'s values, and unions of these); any other annotation is left to the factory.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, Literal, Union

from slidingpolicy.errors import InvalidRecordError

_NAMES: dict[object, str] = {
    int: "an int",
    float: "a number",
    bool: "a bool",
    str: "a str",
    type(None): "None",
}
"""How a message names each scalar type."""


def option_types(factory: Callable[..., object], options: tuple[str, ...]) -> dict[str, Any]:
    """The annotated type of each option of `factory` that it annotates with one this module
    checks; none when its annotations cannot be resolved."""
    try:
        hints = typing.get_type_hints(factory)
    except Exception:
        return {}
    return {o: hints[o] for o in options if o in hints and _describe(hints[o]) is not None}


def check_options(record: str, given: Mapping[str, object], kinds: Mapping[str, Any]) -> None:
    """Each value of `given` of its option's type in `kinds`; InvalidRecordError naming
    `record` and the option otherwise."""
    for option, value in given.items():
        kind = kinds.get(option)
        if kind is not None and not _fits(value, kind):
            raise InvalidRecordError(record, option, f"must be {_describe(kind)}, got {value!r}")


def _fits(value: object, kind: Any) -> bool:
    """Whether `value` is of the type `kind` (an int is a number, a bool is neither)."""
    origin = typing.get_origin(kind)
    if origin is Union or origin is types.UnionType:
        return any(_fits(value, member) for member in typing.get_args(kind))
    if origin is Literal:
        return any(type(value) is type(v) and value == v for v in typing.get_args(kind))
    if kind is float:
        return type(value) in (int, float)
    return type(value) is kind


def _describe(kind: Any) -> str | None:
    """How a message names `kind`; None for a type this module does not check."""
    origin = typing.get_origin(kind)
    if origin is Union or origin is types.UnionType:
        named = [_describe(member) for member in typing.get_args(kind)]
        return None if None in named else " or ".join(n for n in named if n is not None)
    if origin is Literal:
        return "one of " + ", ".join(repr(v) for v in typing.get_args(kind))
    return _NAMES.get(kind)
