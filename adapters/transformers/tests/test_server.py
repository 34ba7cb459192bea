"""End to end: `python -m slidingpolicy_transformers serve` with the tiny model and a policy on
127.0.0.1, streaming token-id requests with SLOs in `vllm_xargs`, every one complete; a bad
SLO answered 400 with its key named; the policy's metrics on `GET /metrics`; SIGTERM stops it
with the trace flushed and every line passing `slidingpolicy check`. The server is stopped by
its process group whatever happens."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from slidingpolicy.invariants import check_plan
from slidingpolicy.replay.client import GAVE_UP, send_all
from slidingpolicy.replay.launcher import Server, free_port
from slidingpolicy.replay.requests import Completion
from slidingpolicy.step_trace import parse_step
from slidingpolicy.telemetry import METRICS

pytestmark = pytest.mark.e2e

READY_WITHIN = 300.0
"""Seconds the server may take to answer /health: a bound against a hang, not a timing."""

REQUESTS = [
    Completion(f"c{i}", 0.05 * i, tuple(range(1, 30 + 40 * i)), 3 + i % 4, 2.0 + i % 3, 0.5)
    for i in range(12)
]


def _serve(
    model_dir: Path, tmp_path: Path, arm: str = "slidingserve+"
) -> Iterator[tuple[Server, Path]]:
    trace = tmp_path / "trace.jsonl"
    port = free_port()
    config = json.dumps({"trace": str(trace)})
    command = [sys.executable, "-m", "slidingpolicy_transformers", "serve", str(model_dir),
               "--arm", arm, "--port", str(port), "--served-model-name", "tiny",
               "--num-blocks", "256", "--adapter-config", config]  # fmt: skip
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    process = Server("tiny", command, env, tmp_path / "server.log", f"http://127.0.0.1:{port}")
    process.start()
    try:
        process.wait_ready(READY_WITHIN)
        yield process, trace
    finally:
        process.stop()


@pytest.fixture
def server(model_dir: Path, tmp_path: Path) -> Iterator[tuple[Server, Path]]:
    """A server of this test alone."""
    yield from _serve(model_dir, tmp_path)


@pytest.fixture(scope="module")
def shared_server(
    model_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Server, Path]]:
    """One server for the tests that leave it running."""
    yield from _serve(model_dir, tmp_path_factory.mktemp("shared"))


def _post(url: str, body: object) -> tuple[int, str]:
    data = json.dumps(body).encode()
    request = urllib.request.Request(f"{url}/v1/completions", data, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_a_replay_completes_and_the_trace_checks(server: tuple[Server, Path]) -> None:
    process, trace = server
    measured = asyncio.run(send_all(process.url, "tiny", REQUESTS, timeout=120.0))
    assert [m.failure for m in measured] == [None] * len(REQUESTS)
    assert [len(m.tokens) for m in measured] == [c.max_tokens for c in REQUESTS]
    status, text = _post(process.url, {"prompt": [1, 2], "max_tokens": 2, "stream": False})
    assert status == 200
    assert len(json.loads(text)["choices"][0]["token_ids"]) == 2
    pid = process.pid
    process.stop()
    assert not process.alive()
    with pytest.raises(ProcessLookupError):
        os.killpg(pid, 0)
    steps = [parse_step(line) for line in trace.read_text().splitlines()]
    assert steps, "the trace was flushed at SIGTERM"
    slos = {(r.ttft_slo, r.tbt_slo) for s in steps for r in s.state.requests}
    assert {(2.0, 0.5), (4.0, 0.5)} <= slos, "the requests' own SLOs reached the policy"
    for step in steps:
        assert step.plan is not None
        assert check_plan(step.state, step.plan) == []


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ({"prompt": [1], "max_tokens": 2, "vllm_xargs": {"ttft_slo": -1}}, "ttft_slo"),
        ({"prompt": [1], "max_tokens": 2, "vllm_xargs": {"ttft_slo": "abc"}}, "ttft_slo"),
        ({"prompt": [1], "max_tokens": 2, "vllm_xargs": {"ttft_slo": 1e308}}, "ttft_slo"),
        ({"prompt": [1], "max_tokens": 2, "vllm_xargs": {"tbt_slo": [1, 2]}}, "tbt_slo"),
        ({"prompt": [1], "max_tokens": 2, "vllm_xargs": {"protected": "yes"}}, "protected"),
        ({"prompt": [1], "max_tokens": 0}, "max_tokens"),
        ({"prompt": [], "max_tokens": 2}, "prompt"),
        ({"prompt": [10**6], "max_tokens": 2}, "prompt"),
        ([1, 2], "object"),
    ],
)
def test_a_bad_request_is_answered_400_naming_the_key(
    shared_server: tuple[Server, Path], body: object, named: str
) -> None:
    process, _ = shared_server
    status, text = _post(process.url, body)
    assert status == 400
    assert named in json.loads(text)["error"]["message"]
    assert process.alive()


def test_the_policys_metrics_are_served_on_metrics(shared_server: tuple[Server, Path]) -> None:
    process, _ = shared_server
    # two requests with the least TTFT SLO the door accepts, 1 ms
    late = [Completion(f"late{i}", 0.0, tuple(range(1, 40)), 3, 1e-3, 0.5) for i in range(2)]
    measured = asyncio.run(send_all(process.url, "tiny", [*late, *REQUESTS[:4]], timeout=120.0))
    assert [m.failure for m in measured] == [None] * 6
    with urllib.request.urlopen(f"{process.url}/metrics", timeout=30) as response:
        assert response.headers["Content-Type"].startswith("text/plain")
        text = response.read().decode()
    samples: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[sample.name] = samples.get(sample.name, 0.0) + sample.value
    ours = {name for name in samples if name.startswith("slidingpolicy_")}
    parts = ("", "_bucket", "_count", "_sum", "_created")
    assert ours <= {m.name.removesuffix("_total") + p for m in METRICS for p in parts} | {
        m.name for m in METRICS
    }
    assert samples["slidingpolicy_plans_total"] > 0
    predicted = samples["slidingpolicy_predicted_step_seconds_count"]
    assert 0 < predicted <= samples["slidingpolicy_step_seconds_count"]
    assert samples["slidingpolicy_latency_margin"] >= 1.0
    assert samples.get("slidingpolicy_fallback_steps_total", 0.0) == 0
    # served, with the requests as they came: whether a 1 ms TTFT is already past at the first
    # snapshot depends on where in a step the request lands, so the counts themselves are
    # proven in test_metrics.py, where each request's lateness is set
    assert "slidingpolicy_demoted_requests_total" in samples
    assert "slidingpolicy_late_start_seconds_count" in samples


def test_a_request_given_up_reaches_replay_as_the_notice(model_dir: Path, tmp_path: Path) -> None:
    """give_up_after in transformers (it was refused before): requests whose TTFT deadline
    passed while they waited end with the notice, which `replay`'s client reads as given up;
    the others complete."""
    arm = "slidingserve+[give_up_after=0.001,max_batch_tokens=64,learn=false]"
    late = [Completion(f"g{i}", 0.0, tuple(range(1, 300)), 3, 1e-3, 0.5) for i in range(8)]
    for process, _ in _serve(model_dir, tmp_path, arm):
        measured = asyncio.run(send_all(process.url, "tiny", late, timeout=120.0))
    failures = [m.failure for m in measured]
    assert GAVE_UP in failures
    assert set(failures) <= {GAVE_UP, None}
    assert all(len(m.tokens) == 3 for m in measured if m.failure is None)
