"""`simulate --timeline`: the trace, loaded back, is the run: every iteration a batch event
with its predicted and actual latency, every request's chunks and tokens, and a miss marked
exactly where a request was late; spans on a track nest or follow one another as a viewer
reads them; recording it changes nothing in the run."""

from __future__ import annotations

import json
from collections import defaultdict
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slidingpolicy import by_name
from slidingpolicy.engine import EngineOptions, simulate
from slidingpolicy.engine.run_types import RunOutput
from slidingpolicy.engine.timeline import BATCHES, FIRST_TID, ITERATIONS, REQUESTS, Timeline
from slidingpolicy.runs.specs import HardwareSpec
from slidingpolicy.workloads import Poisson, Workload, make_workload

HARDWARE = HardwareSpec()


def _run(workload: Workload, timeline: Timeline | None, closed_form: bool = True) -> RunOutput:
    policy = by_name("slidingserve", HARDWARE.predictor())
    options = EngineOptions(strict=True, closed_form=closed_form)
    return simulate(policy, workload, HARDWARE.build(), 3, options, timeline=timeline)


@pytest.fixture(scope="module", params=[True, False], ids=["closed-form", "stepped"])
def traced(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Workload, RunOutput, dict[str, Any]]:
    workload = make_workload("mixed-v1", 60, Poisson(2.5), seed=4)
    timeline = Timeline(workload)
    output = _run(workload, timeline, closed_form=request.param)
    path = tmp_path_factory.mktemp("timeline") / "run.json"
    timeline.write(path, "test")
    return workload, output, json.loads(path.read_text())


def test_recording_a_timeline_changes_nothing(
    traced: tuple[Workload, RunOutput, dict[str, Any]],
) -> None:
    workload, output, _ = traced
    assert _run(workload, None).metrics == output.metrics


def test_a_track_per_request_and_one_for_batches(
    traced: tuple[Workload, RunOutput, dict[str, Any]],
) -> None:
    workload, _, trace = traced
    names = {
        (e["pid"], e["tid"]): e["args"]["name"]
        for e in trace["traceEvents"]
        if e["ph"] == "M" and e["name"] == "thread_name"
    }
    assert names[(BATCHES, ITERATIONS)] == "iterations"
    assert [names[(REQUESTS, FIRST_TID + i)] for i in range(len(workload))] == [
        r.id for r in workload.requests
    ]


def _thread(event: dict[str, Any]) -> tuple[int, int]:
    """An event's (pid, tid) as Perfetto's JSON importer reads it: tid 0 is the process's main
    thread, whose tid is the pid."""
    return event["pid"], event["tid"] or event["pid"]


def test_each_track_is_one_thread_as_perfetto_reads_them(
    traced: tuple[Workload, RunOutput, dict[str, Any]],
) -> None:
    """No two tracks fall on one thread in the viewer (request 0 on thread 0 would share the
    track of the request whose index is the requests' pid), and every event is on a named one."""
    workload, _, trace = traced
    events = trace["traceEvents"]
    names: dict[tuple[int, int], list[str]] = defaultdict(list)
    for e in events:
        if e["ph"] == "M" and e["name"] == "thread_name":
            names[_thread(e)].append(e["args"]["name"])
    shared = {thread: named for thread, named in names.items() if len(named) > 1}
    assert not shared
    assert len(names) == len(workload) + 1
    assert all(_thread(e) in names for e in events if e["ph"] in "Xi")


def test_requests_keep_their_order_in_perfetto(
    traced: tuple[Workload, RunOutput, dict[str, Any]],
) -> None:
    """Perfetto lists a process's main thread (tid = pid) first, whatever its sort index, and
    reads one tid in two processes as one thread moving: no request is its process's main
    thread, and each thread number is used by one process."""
    _, _, trace = traced
    threads = {
        (e["pid"], e["tid"])
        for e in trace["traceEvents"]
        if e["ph"] == "M" and e["name"] == "thread_name"
    }
    assert all(tid != REQUESTS for pid, tid in threads if pid == REQUESTS)
    assert len({tid for _, tid in threads}) == len(threads)


def test_every_iteration_is_a_batch_with_its_latencies(
    traced: tuple[Workload, RunOutput, dict[str, Any]],
) -> None:
    _, output, trace = traced
    events = trace["traceEvents"]
    batches = [e for e in events if e["ph"] == "X" and e["pid"] == BATCHES]
    assert len(batches) == output.metrics.iterations
    for before, after in pairwise(batches):
        assert after["ts"] >= before["ts"] + before["dur"] - 0.01
    for batch in batches:
        assert batch["args"]["actual_ms"] == pytest.approx(batch["dur"] / 1e3, abs=1e-5)
        planned = batch["name"] != "decode run"
        assert (batch["args"]["predicted_ms"] is not None) == planned
    counters = [e for e in events if e["ph"] == "C"]
    assert len(counters) == len(batches)
    assert sum("predicted" in c["args"] for c in counters) == sum(
        b["name"] != "decode run" for b in batches
    )


def test_each_request_shows_its_chunks_and_tokens(
    traced: tuple[Workload, RunOutput, dict[str, Any]],
) -> None:
    workload, output, trace = traced
    spans: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for e in trace["traceEvents"]:
        if e["ph"] == "X" and e["pid"] == REQUESTS:
            spans[e["tid"] - FIRST_TID].append(e)
    for i, request in enumerate(workload.requests):
        mine = spans[i]
        assert mine[0]["name"] == "queued"
        assert mine[0]["ts"] == pytest.approx(
            (request.arrival - workload.requests[0].arrival) * 1e6
        )
        for before, after in pairwise(mine):
            assert after["ts"] >= before["ts"] + before["dur"] - 0.01, "spans never overlap"
        prefill = sum(e["args"]["tokens"] for e in mine if e["name"].startswith("prefill"))
        decoded = sum(e["args"]["tokens"] for e in mine if e["name"].startswith("decode"))
        if output.outcome.preemptions[i] == 0:
            assert prefill == request.prompt_tokens
        generated = int(output.outcome.generated[i])
        assert decoded == max(generated - 1, 0) or output.outcome.preemptions[i] > 0


def _ns(microseconds: float) -> int:
    """A trace time as Perfetto's JSON importer reads it: llround(µs × 1000) nanoseconds."""
    return round(microseconds * 1000)


def _spans_by_track(trace: dict[str, Any]) -> dict[tuple[int, int], list[tuple[int, int]]]:
    """Each track's complete events as [start, end) in the viewer's nanoseconds, by start."""
    spans: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
    for e in trace["traceEvents"]:
        if e["ph"] == "X":
            start = _ns(e["ts"])
            spans[(e["pid"], e["tid"])].append((start, start + _ns(e["dur"])))
    return {track: sorted(mine) for track, mine in spans.items()}


def test_spans_on_a_track_follow_one_another_as_a_viewer_reads_them(
    traced: tuple[Workload, RunOutput, dict[str, Any]],
) -> None:
    """Perfetto drops a complete event that overlaps the one before it on its track, even by a
    nanosecond: back-to-back iterations and a request's consecutive spans must abut exactly."""
    _, _, trace = traced
    for track, spans in _spans_by_track(trace).items():
        for before, after in pairwise(spans):
            assert after[0] >= before[1], (track, before, after)


@given(
    st.floats(0.0, 1e4),
    st.lists(st.floats(1e-4, 10.0), min_size=2, max_size=30),
)
def test_back_to_back_iterations_abut_to_the_nanosecond(offset: float, gaps: list[float]) -> None:
    """Whatever the times, each iteration starts on the nanosecond the one before it ends, and
    the request's decode span covers them exactly."""
    workload = make_workload("mixed-v1", 1, Poisson(1.0), seed=0)
    timeline = Timeline(workload)
    start = workload.requests[0].arrival + offset
    times = [start + sum(gaps[: k + 1]) for k in range(len(gaps))]
    timeline.decode_run(start, times, [0], [1])
    batches = _spans_by_track(timeline.document())[(BATCHES, ITERATIONS)]
    assert len(batches) == len(times)
    for before, after in pairwise(batches):
        assert after[0] == before[1]
    (decode,) = _spans_by_track(timeline.document())[(REQUESTS, FIRST_TID)]
    assert decode == (batches[0][0], batches[-1][1])


def test_names_are_written_as_text_not_escapes(tmp_path: Path) -> None:
    """Perfetto shows a JSON escape as written ("decode \\u00d7N"): the file is UTF-8 text."""
    workload = make_workload("mixed-v1", 1, Poisson(1.0), seed=0)
    timeline = Timeline(workload)
    start = workload.requests[0].arrival
    timeline.decode_run(start, [start + 0.1, start + 0.2], [0], [1])
    path = tmp_path / "run.json"
    timeline.write(path)
    text = path.read_text(encoding="utf-8")
    assert '"decode ×2"' in text
    assert "\\u" not in text


def test_a_miss_is_marked_exactly_on_the_requests_that_were_late(
    traced: tuple[Workload, RunOutput, dict[str, Any]],
) -> None:
    _, output, trace = traced
    missed = {e["tid"] - FIRST_TID for e in trace["traceEvents"] if e["ph"] == "i"}
    late = {i for i, x in enumerate(output.outcome.max_lateness.tolist()) if x > 0}
    assert late, "the run has misses to mark"
    assert missed == late
    for event in trace["traceEvents"]:
        if event["ph"] == "i":
            assert event["name"] == "deadline miss"
            assert event["args"]["late_ms"] > 0
