"""The options each registered policy takes, with its default and a line on what it means.

Nothing is written twice: the defaults are those of the config record (or of the builder's
signature, for a fixed-budget baseline), the meanings are the "- `field`: text" lines of that
record's docstring (or, for a policy of your own, of its factory's). `slidingpolicy policies`
prints them; a test holds every option of ours to having both.
"""

from __future__ import annotations

import inspect
import re
from typing import Any

import attrs

from slidingpolicy.policies.learner import OnlineConfig
from slidingpolicy.policies.online import LEARN
from slidingpolicy.policies.registry import entry_of


@attrs.frozen(slots=True)
class OptionDoc:
    """One option of a policy: its name, its default and what it means."""

    name: str
    default: Any
    meaning: str


_BULLET = re.compile(r"^\s*- `(\w+)`: (.*?)(?=^\s*- `|^\s*$|\Z)", re.M | re.S)


def field_meanings(record: object) -> dict[str, str]:
    """Each "- `field`: text" line of `record`'s docstring (continued lines joined)."""
    doc = inspect.getdoc(record) or ""
    return {m.group(1): " ".join(m.group(2).split()) for m in _BULLET.finditer(doc)}


def _defaults(record: type) -> dict[str, Any]:
    return {f.name: f.default for f in attrs.fields(record) if f.default is not attrs.NOTHING}


def policy_options(name: str) -> tuple[OptionDoc, ...]:
    """The options of the policy registered as `name`, in order, and last `learn`, whose
    default is the policy's (the learner's own options are `online_options`)."""
    entry = entry_of(name)
    record = entry.documented_by
    meanings = field_meanings(record)
    if (
        isinstance(record, type)
        and attrs.has(record)
        and set(entry.options) <= set(_defaults(record))
    ):
        defaults = {**_defaults(record), **entry.defaults}
    else:
        parameters = inspect.signature(entry.build).parameters
        defaults = {k: p.default for k, p in parameters.items() if p.default is not p.empty}
    learn = OptionDoc(LEARN, entry.learns, field_meanings(OnlineConfig)[LEARN])
    return (*(OptionDoc(o, defaults.get(o), meanings.get(o, "")) for o in entry.options), learn)


def online_options() -> tuple[OptionDoc, ...]:
    """The options every policy takes to tune the online learner (`OnlineConfig`)."""
    meanings, defaults = field_meanings(OnlineConfig), _defaults(OnlineConfig)
    return tuple(
        OptionDoc(f.name, defaults[f.name], meanings[f.name]) for f in attrs.fields(OnlineConfig)
    )
