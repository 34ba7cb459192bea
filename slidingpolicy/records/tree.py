"""A persistent B+ tree of requests in one key order, with the bounds a pruned scan needs.

Every operation returns a new tree and leaves the old one as it was (path copying: an insert
or a delete copies the O(log n) nodes on one root-to-leaf path, each of at most `FANOUT`
entries). Each node carries bounds over its subtree — the least and greatest remaining
prefill and deadline, how many requests are protected and how many have started their
prefill — so that a scan can skip every subtree in which no request can match
(`scan`). The key of a request is any tuple that orders it totally (ids make keys unique).

Nodes are named tuples: immutable, and the cheapest record Python builds.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

from slidingpolicy.records.request import Request

FANOUT = 64
"""The most entries a node holds; a node with fewer than FANOUT // 4 merges with a neighbour."""
_LOW = FANOUT // 4
_FILL = FANOUT * 3 // 4
"""Entries per node of a freshly built tree: room for inserts before the first split."""

Key = tuple[Any, ...]


class Node(NamedTuple):
    """A leaf (requests under their keys) or a branch (children under their greatest keys)."""

    keys: tuple[Key, ...]
    entries: tuple[Any, ...]
    leaf: bool
    size: int
    """Requests in the subtree."""
    min_r: int
    max_r: int
    min_d: float
    max_d: float
    protected: int
    started: int
    """Requests in the subtree with prefilled > 0."""


def _leaf(keys: tuple[Key, ...], requests: tuple[Request, ...]) -> Node:
    rs = [q.remaining_prefill for q in requests]
    ds = [q.deadline for q in requests]
    return Node(
        keys,
        requests,
        True,
        len(requests),
        min(rs),
        max(rs),
        min(ds),
        max(ds),
        [q.protected for q in requests].count(True),
        len(requests) - [q.prefilled for q in requests].count(0),
    )


def _branch(children: tuple[Node, ...]) -> Node:
    return Node(
        tuple([c.keys[-1] for c in children]),
        children,
        False,
        sum([c.size for c in children]),
        min([c.min_r for c in children]),
        max([c.max_r for c in children]),
        min([c.min_d for c in children]),
        max([c.max_d for c in children]),
        sum([c.protected for c in children]),
        sum([c.started for c in children]),
    )


def _make(leaf: bool, keys: tuple[Key, ...], entries: tuple[Any, ...]) -> Node:
    return _leaf(keys, entries) if leaf else _branch(entries)


def _split(leaf: bool, keys: tuple[Key, ...], entries: tuple[Any, ...]) -> tuple[Node, ...]:
    """One node of these entries, or two halves when they overflow FANOUT."""
    if len(entries) <= FANOUT:
        return (_make(leaf, keys, entries),)
    half = len(entries) // 2
    return (
        _make(leaf, keys[:half], entries[:half]),
        _make(leaf, keys[half:], entries[half:]),
    )


def _with_request(node: Node, i: int, key: Key, request: Request) -> tuple[Node, ...]:
    """Leaf `node` with `request` inserted at position i: bounds widened in O(1)."""
    keys = (*node.keys[:i], key, *node.keys[i:])
    requests = (*node.entries[:i], request, *node.entries[i:])
    if len(requests) > FANOUT:
        return _split(True, keys, requests)
    r, d = request.remaining_prefill, request.deadline
    return (
        Node(
            keys,
            requests,
            True,
            node.size + 1,
            min(node.min_r, r),
            max(node.max_r, r),
            min(node.min_d, d),
            max(node.max_d, d),
            node.protected + (1 if request.protected else 0),
            node.started + (1 if request.prefilled > 0 else 0),
        ),
    )


def _without_request(node: Node, i: int) -> Node:
    """Leaf `node` less its request at position i (at least one is left): bounds kept in
    O(1) unless the request held one of them."""
    gone: Request = node.entries[i]
    r, d = gone.remaining_prefill, gone.deadline
    requests = (*node.entries[:i], *node.entries[i + 1 :])
    keys = (*node.keys[:i], *node.keys[i + 1 :])
    if r in (node.min_r, node.max_r) or d in (node.min_d, node.max_d):
        return _leaf(keys, requests)
    return Node(
        keys,
        requests,
        True,
        node.size - 1,
        node.min_r,
        node.max_r,
        node.min_d,
        node.max_d,
        node.protected - (1 if gone.protected else 0),
        node.started - (1 if gone.prefilled > 0 else 0),
    )


def _with_children(node: Node, i: int, parts: tuple[Node, ...]) -> Node:
    """Branch `node` with its child i replaced by `parts` (fewer than FANOUT children in all):
    bounds kept in O(1) unless the old child held one of them."""
    old: Node = node.entries[i]
    children = (*node.entries[:i], *parts, *node.entries[i + 1 :])
    if (
        old.min_r == node.min_r
        or old.max_r == node.max_r
        or old.min_d == node.min_d
        or old.max_d == node.max_d
    ):
        return _branch(children)
    keys = (*node.keys[:i], *[p.keys[-1] for p in parts], *node.keys[i + 1 :])
    return Node(
        keys,
        children,
        False,
        node.size - old.size + sum([p.size for p in parts]),
        min([node.min_r, *[p.min_r for p in parts]]),
        max([node.max_r, *[p.max_r for p in parts]]),
        min([node.min_d, *[p.min_d for p in parts]]),
        max([node.max_d, *[p.max_d for p in parts]]),
        node.protected - old.protected + sum([p.protected for p in parts]),
        node.started - old.started + sum([p.started for p in parts]),
    )


def build(pairs: Sequence[tuple[Key, Request]]) -> Node | None:
    """The tree of (key, request) pairs given in increasing key order (None when empty)."""
    if not pairs:
        return None
    level = [
        _leaf(
            tuple([k for k, _ in pairs[i : i + _FILL]]),
            tuple([q for _, q in pairs[i : i + _FILL]]),
        )
        for i in range(0, len(pairs), _FILL)
    ]
    while len(level) > 1:
        level = [_branch(tuple(level[i : i + _FILL])) for i in range(0, len(level), _FILL)]
    return level[0]


def insert(root: Node | None, key: Key, request: Request) -> Node:
    """The tree with `request` under `key` (which it must not hold yet)."""
    if root is None:
        return _leaf((key,), (request,))
    parts = _insert(root, key, request)
    return parts[0] if len(parts) == 1 else _branch(parts)


def _insert(node: Node, key: Key, request: Request) -> tuple[Node, ...]:
    keys, entries = node.keys, node.entries
    if node.leaf:
        i = bisect_left(keys, key)
        if i < len(keys) and keys[i] == key:
            raise KeyError(key)
        return _with_request(node, i, key, request)
    i = min(bisect_left(keys, key), len(keys) - 1)
    parts = _insert(entries[i], key, request)
    if len(entries) + len(parts) - 1 <= FANOUT:
        return (_with_children(node, i, parts),)
    children = (*entries[:i], *parts, *entries[i + 1 :])
    return _split(False, tuple([c.keys[-1] for c in children]), children)


def delete(root: Node | None, key: Key) -> Node | None:
    """The tree without the request under `key` (KeyError if none); None when it empties."""
    if root is None:
        raise KeyError(key)
    node = _delete(root, key)
    while node is not None and not node.leaf and len(node.entries) == 1:
        node = node.entries[0]
    return node


def _delete(node: Node, key: Key) -> Node | None:
    keys, entries = node.keys, node.entries
    i = bisect_left(keys, key)
    if i == len(keys):
        raise KeyError(key)
    if node.leaf:
        if keys[i] != key:
            raise KeyError(key)
        if len(keys) == 1:
            return None
        return _without_request(node, i)
    child = _delete(entries[i], key)
    if child is None:
        if len(entries) == 1:
            return None
        return _branch((*entries[:i], *entries[i + 1 :]))
    if len(child.entries) >= _LOW or len(entries) == 1:
        return _with_children(node, i, (child,))
    j = i - 1 if i > 0 else i + 1
    left, right = (entries[j], child) if j < i else (child, entries[j])
    merged = _split(child.leaf, left.keys + right.keys, left.entries + right.entries)
    lo = min(i, j)
    return _branch((*entries[:lo], *merged, *entries[lo + 2 :]))


def scan(
    root: Node | None,
    node_ok: Callable[[Node], bool],
    item_ok: Callable[[Request], bool],
) -> Iterator[Request]:
    """The requests with item_ok, in key order, skipping every subtree (leaves included)
    where node_ok is False: node_ok must be True wherever some request has item_ok."""
    if root is None:
        return
    stack = [root]
    pop, extend = stack.pop, stack.extend
    while stack:
        node = pop()
        if not node_ok(node):
            continue
        if node.leaf:
            for request in node.entries:
                if item_ok(request):
                    yield request
        else:
            extend(reversed(node.entries))
