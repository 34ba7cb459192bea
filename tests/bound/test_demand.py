"""A request's due work: what eq. 1 forces, non-decreasing in its prompt and due tokens
(which the bound's drops rely on), and nothing before its first token is due."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from slidingpolicy.bound.demand import COLUMNS, demand
from tests.bound.conftest import HARDWARE, cost

requests = st.tuples(st.integers(1, 9000), st.integers(0, 5000), st.floats(0.05, 30.0))


@settings(max_examples=300, deadline=None)
@given(requests, st.integers(0, 500), st.integers(0, 500))
def test_work_rises_with_the_prompt_and_the_due_tokens(
    request: tuple[int, int, float], more_prompt: int, more_due: int
) -> None:
    p, k, ttft = request
    model = cost(HARDWARE[0])
    base = demand(model, np.array([float(p)]), np.array([float(k)]), np.array([ttft]))
    grown = demand(
        model, np.array([float(p + more_prompt)]), np.array([float(k + more_due)]), np.array([ttft])
    )
    assert np.all(grown >= base)


@settings(max_examples=100, deadline=None)
@given(requests)
def test_the_counts_are_the_tokens_and_entries_eq_1_forces(request: tuple[int, int, float]) -> None:
    p, k, ttft = request
    work = demand(cost(HARDWARE[0]), np.array([float(p)]), np.array([float(k)]), np.array([ttft]))[
        0
    ]
    column = dict(zip(COLUMNS, work.tolist(), strict=True))
    if k == 0:
        assert not np.any(work)
        return
    assert column["tokens"] == p + k - 1
    assert column["entries"] == k
    assert column["context"] == sum(p + g for g in range(1, k))
