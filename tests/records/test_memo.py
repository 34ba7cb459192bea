"""What a record derives on first use is kept beside it (`records/_memo.py`), never in it: the
records write their fields only while they are built, deriving a state's views or a queue's
indexes leaves every field as it was, and a memo's entry goes with its record."""

from __future__ import annotations

import ast
import gc
from pathlib import Path
from typing import Any

import attrs

from slidingpolicy import CandidateQueue, Request, SchedulerState
from slidingpolicy.records import candidates, tree
from slidingpolicy.records._memo import Memo

RECORDS = Path(__file__).resolve().parents[2] / "slidingpolicy" / "records"
BUILDERS = {"__attrs_post_init__", "_derive"}
"""The methods that set a record's derived fields while it is built."""


def _late_writes(tree: ast.AST) -> list[int]:
    """Lines naming object.__setattr__ outside the methods that build a record."""
    lines: list[int] = []

    def visit(node: ast.AST, building: bool) -> None:
        if isinstance(node, ast.FunctionDef):
            building = node.name in BUILDERS
        if (
            isinstance(node, ast.Attribute)
            and node.attr == "__setattr__"
            and isinstance(node.value, ast.Name)
            and node.value.id == "object"
            and not building
        ):
            lines.append(node.lineno)
        for child in ast.iter_child_nodes(node):
            visit(child, building)

    visit(tree, False)
    return lines


def test_the_records_write_their_fields_only_while_built() -> None:
    found = {
        f"{path.name}:{line}"
        for path in RECORDS.glob("*.py")
        for line in _late_writes(ast.parse(path.read_text()))
    }
    assert not found, sorted(found)
    assert _late_writes(ast.parse("def view(self):\n    object.__setattr__(self, 'x', 1)\n"))


def _fields(record: Any) -> list[object]:
    return [getattr(record, f.name) for f in attrs.fields(type(record))]


def _same(before: list[object], after: list[object]) -> bool:
    return all(a is b for a, b in zip(before, after, strict=True))


WAITING = Request("w", 0.0, 300, 0, 0, 3.0, 0.1)
STARTED = Request("p", 0.5, 900, 200, 0, 3.0, 0.1)
DECODING = Request("d", 0.2, 64, 64, 3, 3.0, 0.1)


def test_deriving_a_queued_state_leaves_its_fields_as_built() -> None:
    queue = CandidateQueue.of([WAITING, STARTED], prompt_limit=200)
    state = SchedulerState.of(1.0, (DECODING,), queue, 5000.0)
    before, queue_before = _fields(state), _fields(queue)
    assert [r.id for r in state.prefill_candidates] == ["p"]
    assert [r.id for r in state.requests] == ["d", "p"]
    assert state.request("d") is DECODING
    assert state.request("w") is None
    assert state.queue.index("remaining", 1.0).late is None
    assert state.queued
    assert _same(before, _fields(state))
    assert _same(queue_before, _fields(queue))


def test_deriving_a_listed_state_leaves_its_fields_as_built() -> None:
    state = SchedulerState(1.0, (DECODING, WAITING, STARTED), 5000.0)
    before = _fields(state)
    assert state.queue.size == 2
    assert state.queue is state.queue
    assert state.request("w") is WAITING
    assert not state.queued
    assert _same(before, _fields(state))


def test_a_queue_made_from_another_carries_its_indexes() -> None:
    queue = CandidateQueue.of([WAITING, STARTED])
    queue.index("arrival", 1.0)
    later = queue.update(remove=["w"]).with_prompt_limit(100)
    carried = candidates._INDEXES.get(later)
    assert carried is not None
    assert set(carried) == {"arrival"}
    index = later.index("arrival", 1.0)
    assert [q.id for q in tree.scan(index.fresh, _all, _all)] == ["p"]


def test_an_index_built_on_a_view_is_kept_by_the_queue_it_shows() -> None:
    """An engine keeps one queue and shows it to the policy under the iteration's prompt
    limit: an index the policy builds on that view must outlive the view, or every
    iteration sorts the whole queue again."""
    queue = CandidateQueue.of([WAITING, STARTED])
    queue.with_prompt_limit(100).index("arrival", 1.0)
    later = queue.update(remove=["w"])
    carried = candidates._INDEXES.get(later)
    assert carried is not None
    assert set(carried) == {"arrival"}


def _all(_: object) -> bool:
    return True


def test_a_memo_entry_goes_with_its_record() -> None:
    memo: Memo[int] = Memo()
    queue = CandidateQueue.of([WAITING])
    assert memo.put(queue, 7) == 7
    assert memo.get(queue) == 7
    assert memo.put(queue, 8) == 8
    assert memo.get(queue) == 8
    key = id(queue)
    del queue
    gc.collect()
    assert key not in memo._entries
