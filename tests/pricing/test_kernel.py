"""The scalar and array forms of eq. 4–6 agree: the terms of a batch, one chunk at a time
(`add_chunks`) or per chunk as arrays (`chunk_terms`), are eq. 4's sums, and
`LatencyPredictor.price` is `price_arrays` (on `features.linear` and `features.scenario`) of
a batch of one, bit for bit."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from slidingpolicy import LatencyPredictor
from slidingpolicy.pricing.features import EMPTY, Terms, add_chunks, chunk_terms
from slidingpolicy.testing.strategies import predictors

chunks = st.lists(st.tuples(st.integers(0, 3000), st.integers(0, 8000)), max_size=12)


@given(chunks)
def test_the_scalar_and_array_terms_are_eq_4s_sums(batch: list[tuple[int, int]]) -> None:
    """x1..x7 written out from their definitions over P = {c ≥ 2} and D = {c = 1} (eq. 4):
    what `add_chunks` builds one chunk at a time, and what `chunk_terms` gives per chunk (where
    an empty chunk, c = 0, adds nothing)."""
    columns = chunk_terms(*(np.array([x[i] for x in batch], dtype=np.int64) for i in (0, 1)))
    present = [(c, u) for c, u in batch if c]
    p = [(c, u) for c, u in present if c >= 2]
    d = [u for c, u in present if c == 1]
    eq4 = (
        sum(c * (u + c) for c, u in p),
        sum(c * c for c, _ in p),
        sum(u for _, u in present),
        len(d),
        sum(d),
        sum(c for c, _ in p),
        max((c for c, _ in p), default=0),
    )
    assert add_chunks(EMPTY, present) == eq4
    arrays = (*(int(column.sum()) for column in columns[:6]), int(columns[6].max(initial=0)))
    assert arrays == eq4


@given(predictors(tiles=True), st.lists(chunks, min_size=1, max_size=6))
@settings(max_examples=300)
def test_the_scalar_price_is_the_kernel_price_bit_for_bit(
    predictor: LatencyPredictor, batches: list[list[tuple[int, int]]]
) -> None:
    terms: list[Terms] = [add_chunks(EMPTY, [(c, u) for c, u in b if c]) for b in batches]
    columns = tuple(np.array(column, dtype=np.int64) for column in zip(*terms, strict=True))
    kernel = predictor.price_arrays(columns).tolist()
    assert [predictor.price(t) for t in terms] == kernel
