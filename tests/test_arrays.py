"""Read-only arrays: the same object marked not writeable, or a read-only float copy."""

from __future__ import annotations

import numpy as np
import pytest

from slidingpolicy._arrays import float_read_only, read_only


def test_read_only_marks_the_same_array() -> None:
    array = np.arange(3)
    assert read_only(array) is array
    with pytest.raises(ValueError, match="read-only"):
        array[0] = 7


def test_float_read_only_copies_as_float64() -> None:
    source = [1, 2, 3]
    copy = float_read_only(source)
    assert copy.dtype == np.float64
    assert copy.tolist() == [1.0, 2.0, 3.0]
    assert not copy.flags.writeable
