"""RequestSpec and Workload refuse bad values and name the request and field."""

from __future__ import annotations

import math

import numpy as np
import pytest

from slidingpolicy.errors import InvalidRecordError
from slidingpolicy.workloads import RequestSpec, Workload

GOOD = {
    "id": "r1",
    "arrival": 0.5,
    "prompt_tokens": 10,
    "output_tokens": 5,
    "ttft_slo": 3.0,
    "tbt_slo": 0.1,
    "source": "sharegpt",
}


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("arrival", math.nan),
        ("arrival", -1.0),
        ("arrival", math.inf),
        ("prompt_tokens", 0),
        ("output_tokens", 0),
        ("prompt_tokens", 2.0),
        ("ttft_slo", 0.0),
        ("tbt_slo", -0.1),
        ("ttft_slo", math.nan),
        ("tbt_slo", math.nan),
    ],
)
def test_a_bad_field_is_named_with_the_request_id(field: str, value: float) -> None:
    with pytest.raises(InvalidRecordError, match=rf"request 'r1': {field}"):
        RequestSpec(**{**GOOD, field: value})  # type: ignore[arg-type]


def spec(i: int, arrival: float) -> RequestSpec:
    return RequestSpec(f"r{i}", arrival, 10 + i, 1 + i, 3.0, 0.1, "sharegpt")


def test_workload_rejects_repeated_ids() -> None:
    with pytest.raises(InvalidRecordError, match="repeat the id 'r1'"):
        Workload("w", (spec(1, 0.0), spec(1, 1.0)))


def test_workload_rejects_arrivals_out_of_order() -> None:
    with pytest.raises(InvalidRecordError, match=r"'r2' arrives at 1\.0 before 'r1'"):
        Workload("w", (spec(1, 2.0), spec(2, 1.0)))


def test_workload_rejects_no_requests() -> None:
    with pytest.raises(InvalidRecordError, match="non-empty"):
        Workload("w", ())


def test_columns_mirror_the_requests_read_only_and_built_once() -> None:
    workload = Workload("w", (spec(0, 0.0), spec(1, 0.0), spec(2, 4.5)))
    columns = workload.columns()
    assert columns is workload.columns()
    assert columns.arrival.tolist() == [0.0, 0.0, 4.5]
    assert columns.prompt.tolist() == [10, 11, 12]
    assert columns.output.tolist() == [1, 2, 3]
    assert columns.ttft.tolist() == [3.0] * 3
    assert columns.tbt.tolist() == [0.1] * 3
    for array in (columns.arrival, columns.prompt, columns.output, columns.ttft, columns.tbt):
        with pytest.raises(ValueError, match="read-only"):
            array[0] = 0
    assert columns.prompt.dtype == np.int64
