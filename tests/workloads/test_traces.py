"""Trace loaders: both formats by header; malformed input named by file:line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from slidingpolicy.errors import InvalidRecordError, TraceFormatError
from slidingpolicy.workloads import Poisson, load_trace, load_workload


def write(tmp_path: Path, text: str, name: str = "t.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_vidur_format_without_arrivals(tmp_path: Path) -> None:
    trace = load_trace(write(tmp_path, "num_prefill_tokens,num_decode_tokens\n10,3\n7,1\n"))
    assert trace.format == "vidur"
    assert trace.prompt_tokens.tolist() == [10, 7]
    assert trace.output_tokens.tolist() == [3, 1]
    assert trace.arrivals is None


def test_vidur_format_with_arrivals_in_any_column_order(tmp_path: Path) -> None:
    text = "arrived_at,num_prefill_tokens,num_decode_tokens\n2.5,10,3\n4.0,7,1\n"
    trace = load_trace(write(tmp_path, text))
    assert trace.arrivals is not None
    assert trace.arrivals.tolist() == [0.0, 1.5]


def test_vidur_format_with_the_derived_columns(tmp_path: Path) -> None:
    text = "num_prefill_tokens,num_decode_tokens,num_total_tokens,pd_ratio\n10,5,15,2.0\n"
    assert load_trace(write(tmp_path, text)).prompt_tokens.tolist() == [10]


def test_azure_format_with_date_times(tmp_path: Path) -> None:
    text = (
        "TIMESTAMP,ContextTokens,GeneratedTokens\n"
        "2023-11-16 18:15:46.6805900,374,44\n"
        "2023-11-16 18:15:50.9951690,396,109\n"
    )
    trace = load_trace(write(tmp_path, text))
    assert trace.format == "azure"
    assert trace.arrivals is not None
    assert trace.arrivals.tolist() == pytest.approx([0.0, 4.314579])
    assert trace.output_tokens.tolist() == [44, 109]


def test_azure_format_with_seconds(tmp_path: Path) -> None:
    text = "TIMESTAMP,ContextTokens,GeneratedTokens\n10.0,5,1\n12.5,6,2\n"
    trace = load_trace(write(tmp_path, text))
    assert trace.arrivals is not None
    assert trace.arrivals.tolist() == [0.0, 2.5]


@pytest.mark.parametrize(
    ("text", "where", "problem"),
    [
        ("a,b\n1,2\n", 1, "unrecognized header"),
        ("num_prefill_tokens,num_decode_tokens\n5,x\n", 2, "not a number"),
        ("num_prefill_tokens,num_decode_tokens\n5,2\n0,2\n", 3, "must be an int >= 1"),
        ("num_prefill_tokens,num_decode_tokens\n5,2.5\n", 2, "must be an int >= 1"),
        ("num_prefill_tokens,num_decode_tokens\n5,2,9\n", 2, "3 fields"),
        ("num_prefill_tokens,num_decode_tokens\n", 2, "no requests"),
        ("arrived_at,num_prefill_tokens,num_decode_tokens\n2,5,2\n1,5,2\n", 3, "back in time"),
        ("arrived_at,num_prefill_tokens,num_decode_tokens\nnan,5,2\n", 2, "finite"),
        ("TIMESTAMP,ContextTokens,GeneratedTokens\nyesterday,5,2\n", 2, "date-time"),
    ],
)
def test_malformed_input_names_file_line_and_the_accepted_formats(
    tmp_path: Path, text: str, where: int, problem: str
) -> None:
    with pytest.raises(TraceFormatError, match=rf"bad\.csv:{where}: .*{problem}.*accepted formats"):
        load_trace(write(tmp_path, text, "bad.csv"))


def test_a_missing_file_is_a_trace_error(tmp_path: Path) -> None:
    with pytest.raises(TraceFormatError, match="cannot read"):
        load_trace(tmp_path / "absent.csv")


def test_load_workload_replays_the_trace_times(tmp_path: Path) -> None:
    path = write(tmp_path, "arrived_at,num_prefill_tokens,num_decode_tokens\n1,5,2\n3,6,1\n")
    workload = load_workload(path, slo_source="arxiv")
    assert workload.name == "t"
    assert workload.columns().arrival.tolist() == [0.0, 2.0]
    assert workload.columns().ttft.tolist() == [10.0, 10.0]


def test_load_workload_needs_arrivals_when_the_trace_has_none(tmp_path: Path) -> None:
    path = write(tmp_path, "num_prefill_tokens,num_decode_tokens\n5,2\n6,1\n")
    with pytest.raises(InvalidRecordError, match="no arrival column"):
        load_workload(path)
    assert len(load_workload(path, arrivals=Poisson(1.0), seed=1)) == 2


def test_load_workload_refuses_more_requests_than_the_trace_has(tmp_path: Path) -> None:
    path = write(tmp_path, "num_prefill_tokens,num_decode_tokens\n5,2\n")
    with pytest.raises(InvalidRecordError, match="num_requests"):
        load_workload(path, arrivals=Poisson(1.0), num_requests=2)


@pytest.mark.parametrize(
    ("name", "rows", "timed"),
    [
        ("sharegpt_8k_filtered_stats_llama2_tokenizer.csv", 30731, False),
        ("arxiv_summarization_stats_llama2_tokenizer_filtered_v2.csv", 28257, False),
        ("splitwise_conv.csv", 19366, True),
    ],
)
def test_the_reference_traces_load(traces: Path, name: str, rows: int, timed: bool) -> None:
    trace = load_trace(traces / name)
    assert len(trace) == rows
    assert (trace.arrivals is not None) == timed
    assert np.all(trace.prompt_tokens >= 1)
