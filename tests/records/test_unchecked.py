"""`records/_unchecked.py` is the one unchecked way into the records: no other module of the
library creates an object without its `__init__` (`object.__new__`) or writes a slot through
its descriptor (`__set__`); and what it builds equals the checked record, field by field."""

from __future__ import annotations

import ast
from pathlib import Path

import attrs

from slidingpolicy.records._unchecked import constructor
from slidingpolicy.records.plan import Allocation
from slidingpolicy.records.request import Request, trusted_request

PACKAGE = Path(__file__).resolve().parents[2] / "slidingpolicy"
UNCHECKED = PACKAGE / "records" / "_unchecked.py"


def _bypasses(tree: ast.AST) -> list[int]:
    """Lines that call object.__new__ or name a descriptor's __set__."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in ("__new__", "__set__"):
            owner = node.value
            if node.attr == "__set__" or (isinstance(owner, ast.Name) and owner.id == "object"):
                lines.append(node.lineno)
    return lines


def test_only_the_unchecked_module_bypasses_the_records_checks() -> None:
    found = {
        f"{path.relative_to(PACKAGE.parent)}:{line}"
        for path in PACKAGE.rglob("*.py")
        if path != UNCHECKED
        for line in _bypasses(ast.parse(path.read_text()))
    }
    assert not found, sorted(found)
    assert _bypasses(ast.parse("x = object.__new__(T)\nf = T.a.__set__"))


def test_an_unchecked_record_equals_the_checked_one_field_by_field() -> None:
    checked = Request("r1", 1.0, 512, 100, 0, 3.0, 0.1)
    unchecked = trusted_request("r1", 1.0, 512, 100, 0, 3.0, 0.1)
    for field in attrs.fields(Request):
        assert getattr(unchecked, field.name) == getattr(checked, field.name), field.name
    decoding = Request("r2", 0.5, 8, 8, 3, 3.0, 0.1, protected=True, max_new_tokens=9)
    later = decoding.next_token()
    fresh = Request("r2", 0.5, 8, 8, 4, 3.0, 0.1, protected=True, max_new_tokens=9)
    for field in attrs.fields(Request):
        assert getattr(later, field.name) == getattr(fresh, field.name), field.name


def test_the_constructor_takes_every_field_in_order() -> None:
    allocation = constructor(Allocation)("r1", 0)
    assert (allocation.request_id, allocation.tokens) == ("r1", 0)
