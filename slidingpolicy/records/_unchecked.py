"""The one unchecked way into the records: a frozen attrs record built from every field's value
without its validators, for the callers that vouch for those values (the engine's trusted
constructors, `Request.next_token`, a stage allocating tokens to a checked record's id).

Like attrs, which writes each record's `__init__` once, `constructor` writes the unchecked one:
a function of every field, in `attrs.fields` order, that sets each slot through its descriptor
(faster than `object.__setattr__`). Nothing else in the library creates a record unchecked.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

import attrs

T = TypeVar("T")


def constructor(cls: type[T]) -> Callable[..., T]:
    """`cls(...)` without `__attrs_post_init__`: every field, derived ones included, given
    positionally in `attrs.fields` order."""
    names = [field.name for field in attrs.fields(cast(Any, cls))]
    namespace: dict[str, Any] = {"new": object.__new__, "cls": cls}
    lines = [f"def unchecked({', '.join(names)}):", "    record = new(cls)"]
    for name in names:
        namespace[f"set{name}"] = getattr(cls, name).__set__
        lines.append(f"    set{name}(record, {name})")
    lines.append("    return record")
    exec("\n".join(lines), namespace)
    made: Callable[..., T] = namespace["unchecked"]
    return made
