"""The persistent B+ tree of `records.tree`: against a sorted list, with exact bounds on
every node, old versions untouched, and scans that skip only what cannot match."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slidingpolicy.records import tree
from slidingpolicy.records.request import Request
from slidingpolicy.records.tree import Key, Node


def _items(root: Node | None) -> Iterator[Request]:
    """Every request of the tree, in key order."""
    return tree.scan(root, lambda _: True, lambda _: True)


@contextmanager
def small_nodes() -> Iterator[None]:
    """Nodes of at most 4 entries, so that a few dozen requests make a deep tree."""
    with mock.patch.multiple(tree, FANOUT=4, _LOW=1, _FILL=3):
        yield


def request(i: int, r: int, slack: float, protected: bool, started: bool) -> Request:
    prompt = r + (1 if started else 0)
    return Request(f"q{i}", 10.0 + i % 7, prompt, prompt - r, 0, 1.0 + slack, 0.1, protected)


requests_ = st.builds(
    request,
    st.integers(0, 10_000),
    st.integers(1, 50),
    st.floats(0.0, 5.0),
    st.booleans(),
    st.booleans(),
)


def key(q: Request) -> Key:
    return (q.remaining_prefill, q.arrival, q.id)


def check(node: Node | None, fanout: int) -> list[Request]:
    """Every invariant of the subtree (sorted keys, exact bounds and counts, fanout); its
    requests in order."""
    if node is None:
        return []
    assert 1 <= len(node.entries) <= fanout
    assert list(node.keys) == sorted(node.keys)
    if node.leaf:
        found = list(node.entries)
        assert list(node.keys) == [key(q) for q in found]
    else:
        found = []
        for child in node.entries:
            found += check(child, fanout)
        assert list(node.keys) == [c.keys[-1] for c in node.entries]
    assert node.size == len(found)
    assert node.min_r == min(q.remaining_prefill for q in found)
    assert node.max_r == max(q.remaining_prefill for q in found)
    assert node.min_d == min(q.deadline for q in found)
    assert node.max_d == max(q.deadline for q in found)
    assert node.protected == sum(q.protected for q in found)
    assert node.started == sum(q.prefilled > 0 for q in found)
    return found


@given(st.lists(requests_, unique_by=lambda q: q.id), st.data())
@settings(max_examples=150)
def test_inserts_and_deletes_match_a_sorted_list(
    requests: list[Request], data: st.DataObject
) -> None:
    with small_nodes():
        model: dict[Key, Request] = {}
        root = tree.build([(key(q), q) for q in sorted(requests[: len(requests) // 2], key=key)])
        model.update((key(q), q) for q in requests[: len(requests) // 2])
        versions = [(root, sorted(model))]
        for q in requests[len(requests) // 2 :]:
            if len(model) > 0 and data.draw(st.booleans()):
                gone = data.draw(st.sampled_from(sorted(model)))
                assert root is not None
                root = tree.delete(root, gone)
                del model[gone]
            root = tree.insert(root, key(q), q)
            model[key(q)] = q
            versions.append((root, sorted(model)))
            assert [key(x) for x in check(root, 4)] == sorted(model)
        for version, keys in versions:
            assert [key(x) for x in _items(version)] == keys


@given(st.lists(requests_, min_size=1, unique_by=lambda q: q.id), st.integers(1, 50))
@settings(max_examples=100)
def test_a_pruned_scan_finds_exactly_the_matching_requests(
    requests: list[Request], threshold: int
) -> None:
    with small_nodes():
        root = tree.build([(key(q), q) for q in sorted(requests, key=key)])
        visited: list[Node] = []

        def possible(node: Node) -> bool:
            visited.append(node)
            return node.max_r >= threshold and node.protected > 0

        found = list(
            tree.scan(root, possible, lambda q: q.remaining_prefill >= threshold and q.protected)
        )
        expected = [
            q for q in sorted(requests, key=key) if q.remaining_prefill >= threshold and q.protected
        ]
        assert found == expected
        assert root is not None
        if not (root.max_r >= threshold and root.protected > 0):
            assert visited == [root]
        opened = [n for n in visited if not n.leaf and n.max_r >= threshold and n.protected > 0]
        children = sum(len(n.entries) for n in opened)
        assert len(visited) == 1 + children


def test_a_missing_key_is_a_key_error_and_the_tree_is_unchanged() -> None:
    q = request(1, 5, 1.0, False, False)
    root = tree.insert(None, key(q), q)
    with pytest.raises(KeyError):
        tree.delete(root, (9, 0.0, "nobody"))
    with pytest.raises(KeyError):
        tree.insert(root, key(q), q)
    with pytest.raises(KeyError):
        tree.delete(None, key(q))
    assert list(_items(root)) == [q]
    assert tree.delete(root, key(q)) is None
