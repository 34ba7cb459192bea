"""A policy and its options as one string, ``name[key=value,...]``: how the command line names
a configured policy (``sarathi-edf[token_budget=768]``) or router (``slo-aware[notice=true]``)
and how results label it.

Values are JSON (numbers, true/false, null) or, when they do not parse as JSON, plain strings
(``slidingserve[level_order=deadline]``). Options are written in the order given.
"""

from __future__ import annotations

import json
from typing import Any

from slidingpolicy._parse import parse_json
from slidingpolicy.errors import PolicyLabelError

Options = tuple[tuple[str, Any], ...]


def label(name: str, options: Options = ()) -> str:
    """``name``, or ``name[key=value,...]`` with each value as JSON (strings bare)."""
    if not options:
        return name
    parts = (f"{k}={v if isinstance(v, str) else json.dumps(v)}" for k, v in options)
    return f"{name}[{','.join(parts)}]"


def _value(text: str) -> Any:
    try:
        return parse_json(text)
    except ValueError:
        return text


def parse_label(text: str, kind: str = "policy") -> tuple[str, Options]:
    """The name and options of one label (the inverse of `label`); an error names the label
    as a `kind` ("policy", "router")."""
    text = text.strip()
    name, bracket, rest = text.partition("[")
    name = name.strip()
    if not name or (bracket and not rest.endswith("]")) or "]" in name:
        raise PolicyLabelError(f"{kind} {text!r}: expected name or name[key=value,...]")
    options: list[tuple[str, Any]] = []
    body = rest[:-1].strip() if bracket else ""
    for part in body.split(",") if body else ():
        key, equals, value = part.partition("=")
        if not equals or not key.strip() or not value.strip():
            raise PolicyLabelError(f"{kind} {text!r}: option {part.strip()!r} is not key=value")
        if any(key.strip() == k for k, _ in options):
            raise PolicyLabelError(f"{kind} {text!r}: option {key.strip()!r} is given twice")
        options.append((key.strip(), _value(value.strip())))
    return name, tuple(options)


def plain_name(name: object) -> bool:
    """Whether `name` can be registered: a label with no options, and no commas, spaces or
    equals signs in it (the policies' and the routers' registries)."""
    if not isinstance(name, str):
        return False
    try:
        return parse_label(name) == (name, ()) and not any(c in name for c in ", \t=")
    except PolicyLabelError:
        return False


def split_labels(text: str) -> list[str]:
    """The comma-separated labels of `text`, commas inside brackets kept."""
    labels, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += {"[": 1, "]": -1}.get(char, 0)
        if char == "," and depth == 0:
            labels.append(text[start:i])
            start = i + 1
    labels.append(text[start:])
    return [part.strip() for part in labels if part.strip()]
