"""The scalar forms written inline for speed are the kernel's formulas (eq. 4–6) bit for bit:
`add_chunk` is `prefill_terms` (or a decode) added to the batch, and `LatencyPredictor.price`
is `price_arrays` (on `features.linear` and `features.scenario`) of a batch of one."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from slidingpolicy import LatencyPredictor
from slidingpolicy.pricing.features import EMPTY, Terms, add_chunk, add_chunks, prefill_terms
from tests.strategies import predictors

chunks = st.lists(st.tuples(st.integers(0, 3000), st.integers(0, 8000)), max_size=12)


@given(chunks, st.integers(1, 3000), st.integers(0, 8000))
def test_add_chunk_adds_prefill_terms_or_a_decode(
    before: list[tuple[int, int]], c: int, u: int
) -> None:
    x1, x2, x3, x4, x5, x6, x7 = terms = add_chunks(EMPTY, [(c, u) for c, u in before if c])
    if c >= 2:
        a1, a2, a3, a6, a7 = prefill_terms(c, u)
        expected = (x1 + a1, x2 + a2, x3 + a3, x4, x5, x6 + a6, max(x7, a7))
    else:
        expected = (x1, x2, x3 + u, x4 + 1, x5 + u, x6, x7)
    assert add_chunk(terms, c, u) == expected


@given(predictors(tiles=True), st.lists(chunks, min_size=1, max_size=6))
@settings(max_examples=300)
def test_the_scalar_price_is_the_kernel_price_bit_for_bit(
    predictor: LatencyPredictor, batches: list[list[tuple[int, int]]]
) -> None:
    terms: list[Terms] = [add_chunks(EMPTY, [(c, u) for c, u in b if c]) for b in batches]
    columns = tuple(np.array(column, dtype=np.int64) for column in zip(*terms, strict=True))
    kernel = predictor.price_arrays(columns).tolist()
    assert [predictor.price(t) for t in terms] == kernel
