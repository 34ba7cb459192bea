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
class Window:
    """The requests a run counts (`workloads.steady_state`): `count` of them from index
    `first`, arriving after `warmup` seconds of warm-up; arrivals go on until `horizon`, the
    last deadline of a counted token."""

    first: int
    count: int
    warmup: float
    horizon: float

    def __attrs_post_init__(self) -> None:
        _validate.integer("window", "first", self.first, 0)
        _validate.integer("window", "count", self.count, 1)
        _validate.seconds("window", "warmup", self.warmup)
        _validate.seconds("window", "horizon", self.horizon)

    @property
    def indices(self) -> range:
        """The counted requests' indices in the workload."""
        return range(self.first, self.first + self.count)

    def to_dict(self) -> dict[str, float]:
        """Plain values for JSON."""
        return attrs.asdict(self)


@attrs.frozen(slots=True)
class Workload:
    """Named requests with unique ids and non-decreasing arrivals; a `window` names the ones
    a run counts (None: every one)."""

    name: str
    requests: tuple[RequestSpec, ...]
    window: Window | None = None
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
        window = self.window
        if window is not None and window.first + window.count > len(self):
            raise InvalidRecordError(
                record,
                "window",
                f"counts requests {window.first} to {window.first + window.count - 1}, beyond "
                f"its {len(self)} requests",
            )
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

    @property
    def counted(self) -> range:
        """The indices of the requests a run counts."""
        return range(len(self)) if self.window is None else self.window.indices

    def measured(self) -> Workload:
        """The counted requests alone, as a workload that counts them all."""
        if self.window is None:
            return self
        counted = self.window.indices
        return Workload(self.name, self.requests[counted.start : counted.stop])

    def columns(self) -> WorkloadColumns:
        """Read-only numpy columns (arrival, prompt, output, ttft, tbt), built once."""
        return self._columns
