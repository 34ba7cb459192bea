"""A request as a workload specifies it, and a workload: requests in arrival order."""

from __future__ import annotations

import attrs
import numpy as np
from numpy.typing import NDArray

from slidingpolicy import _validate
from slidingpolicy._arrays import read_only
from slidingpolicy.errors import InvalidRecordError


@attrs.frozen(slots=True)
class RequestSpec:
    """One request: when it arrives, its lengths, its SLOs (seconds), its data set and, under
    QoServe's tiers, its tier (0 interactive, 1 and 2 batch)."""

    id: str
    arrival: float
    prompt_tokens: int
    output_tokens: int
    ttft_slo: float
    tbt_slo: float
    source: str
    tier: int | None = None

    def __attrs_post_init__(self) -> None:
        record = f"request {self.id!r}"
        if not isinstance(self.id, str) or not self.id:
            raise InvalidRecordError(record, "id", "must be a non-empty string")
        _validate.seconds(record, "arrival", self.arrival)
        for field in ("prompt_tokens", "output_tokens"):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidRecordError(record, field, f"={value!r} must be an int >= 1")
        _validate.duration(record, "ttft_slo", self.ttft_slo)
        _validate.duration(record, "tbt_slo", self.tbt_slo)
        if self.tier is not None and (type(self.tier) is not int or not 0 <= self.tier <= 2):
            raise InvalidRecordError(record, "tier", f"={self.tier!r} must be 0, 1, 2 or None")


@attrs.frozen(slots=True)
class WorkloadColumns:
    """The workload as read-only columns, one entry per request in order."""

    arrival: NDArray[np.float64]
    prompt: NDArray[np.int64]
    output: NDArray[np.int64]
    ttft: NDArray[np.float64]
    tbt: NDArray[np.float64]


@attrs.frozen(slots=True)
class Workload:
    """Named requests with unique ids and non-decreasing arrivals."""

    name: str
    requests: tuple[RequestSpec, ...]
    _columns: WorkloadColumns = attrs.field(init=False, repr=False, eq=False)

    def __attrs_post_init__(self) -> None:
        record = f"workload {self.name!r}"
        if not isinstance(self.requests, tuple) or not self.requests:
            raise InvalidRecordError(record, "requests", "must be a non-empty tuple")
        seen: set[str] = set()
        previous = self.requests[0]
        for request in self.requests:
            if request.id in seen:
                raise InvalidRecordError(record, "requests", f"repeat the id {request.id!r}")
            seen.add(request.id)
            if request.arrival < previous.arrival:
                raise InvalidRecordError(
                    record,
                    "requests",
                    f"are out of order: {request.id!r} arrives at {request.arrival} before "
                    f"{previous.id!r} at {previous.arrival}",
                )
            previous = request
        columns = WorkloadColumns(
            arrival=np.array([r.arrival for r in self.requests], dtype=np.float64),
            prompt=np.array([r.prompt_tokens for r in self.requests], dtype=np.int64),
            output=np.array([r.output_tokens for r in self.requests], dtype=np.int64),
            ttft=np.array([r.ttft_slo for r in self.requests], dtype=np.float64),
            tbt=np.array([r.tbt_slo for r in self.requests], dtype=np.float64),
        )
        for array in (columns.arrival, columns.prompt, columns.output, columns.ttft, columns.tbt):
            read_only(array)
        object.__setattr__(self, "_columns", columns)

    def __len__(self) -> int:
        return len(self.requests)

    def columns(self) -> WorkloadColumns:
        """Read-only numpy columns (arrival, prompt, output, ttft, tbt), built once."""
        return self._columns
