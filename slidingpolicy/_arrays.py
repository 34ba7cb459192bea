"""Read-only numpy arrays, for the immutable records that hold them."""

from __future__ import annotations

from typing import Any, TypeVar

import numpy as np
from numpy.typing import NDArray

A = TypeVar("A", bound=NDArray[Any])


def read_only(array: A) -> A:
    """`array`, marked not writeable (the same object, not a copy)."""
    array.setflags(write=False)
    return array


def float_read_only(values: object) -> NDArray[np.float64]:
    """A read-only float64 copy of `values` (an attrs converter)."""
    return read_only(np.array(values, dtype=np.float64))
