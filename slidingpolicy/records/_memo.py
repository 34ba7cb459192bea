"""Values derived from a record on first use, kept beside the record rather than in it.

A frozen record never changes, so what is derived from it never goes stale: a `Memo` keeps
such a value by the record's identity for as long as the record lives (a weak reference to
the record drops the entry with it). The records stay plain values, every field set once
when they are built; what a memo holds is never part of a record's value.
"""

from __future__ import annotations

import weakref
from typing import Generic, TypeVar

V = TypeVar("V")


class Memo(Generic[V]):
    """A table of one derived value per live record, by identity."""

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: dict[int, tuple[weakref.ref[object], V]] = {}

    def get(self, record: object) -> V | None:
        """The value kept for `record`, if any."""
        entry = self._entries.get(id(record))
        return None if entry is None else entry[1]

    def put(self, record: object, value: V) -> V:
        """Keep `value` for `record` until it is collected; returns `value`."""
        key, entries = id(record), self._entries
        entry = entries.get(key)
        if entry is None:

            def drop(ref: weakref.ref[object]) -> None:
                if entries.get(key, (None,))[0] is ref:
                    del entries[key]

            entries[key] = (weakref.ref(record, drop), value)
        else:
            entries[key] = (entry[0], value)
        return value
