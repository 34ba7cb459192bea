"""A batch as the roofline prices it: the checks of its arrays and the summary (tokens,
requests, decodes and their context, prefill attention) its iteration time depends on."""

from __future__ import annotations

from collections.abc import Callable

import attrs
import numpy as np
from numpy.typing import NDArray

from slidingpolicy.errors import InvalidRecordError

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

DenseTimes = Callable[[FloatArray], FloatArray]
"""The part of an iteration's time that depends on its token count alone, per entry."""


def check_batch(chunks: IntArray, contexts: IntArray) -> None:
    """Reject a batch whose arrays differ in shape, or hold a chunk < 1 or a context < 0."""
    if chunks.ndim != 1 or chunks.shape != contexts.shape:
        raise InvalidRecordError(
            "batch", "chunks", f"shape {chunks.shape} must be 1-D and equal contexts' shape"
        )
    if chunks.size and int(chunks.min()) < 1:
        raise InvalidRecordError("batch", "chunks", f"min={int(chunks.min())} must be >= 1")
    if contexts.size and int(contexts.min()) < 0:
        raise InvalidRecordError("batch", "contexts", f"min={int(contexts.min())} must be >= 0")


def check_decode_run(num_decodes: int, total_context: IntArray) -> None:
    """Reject a decode run with a negative count or context, or context without requests."""
    if isinstance(num_decodes, bool) or not isinstance(num_decodes, int | np.integer):
        raise InvalidRecordError("decode run", "num_decodes", f"={num_decodes!r} is not an int")
    if num_decodes < 0:
        raise InvalidRecordError("decode run", "num_decodes", f"={num_decodes} must be >= 0")
    if total_context.ndim != 1:
        raise InvalidRecordError("decode run", "total_context", "must be 1-D")
    if total_context.size and int(total_context.min()) < 0:
        raise InvalidRecordError("decode run", "total_context", "must be >= 0")
    if num_decodes == 0 and total_context.size and int(total_context.max()) > 0:
        raise InvalidRecordError("decode run", "total_context", "> 0 with no decodes")


@attrs.frozen(slots=True)
class BatchSummary:
    """What the iteration time depends on, one entry per iteration (see `RooflineModel`)."""

    tokens: FloatArray
    requests: FloatArray
    decodes: FloatArray
    decode_context: FloatArray
    prefill_attention: FloatArray


def count_batch(tokens: FloatArray, entries: FloatArray) -> BatchSummary:
    """The summary of batches with these token and entry counts and no attention."""
    zeros = np.zeros(tokens.shape)
    return BatchSummary(tokens, entries, zeros, zeros, zeros)


def decode_run(num_decodes: int, total_context: IntArray) -> BatchSummary:
    """The summary of decode-only iterations: `num_decodes` tokens each, these contexts."""
    count = np.full(total_context.size, float(num_decodes))
    return BatchSummary(
        tokens=count,
        requests=count,
        decodes=count,
        decode_context=total_context.astype(np.float64),
        prefill_attention=np.zeros(total_context.size),
    )
