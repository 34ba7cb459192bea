"""End to end: `python -m slidingpolicy_ray serve` on a local Ray cluster of 2 replicas of the
tiny model on the CPU, routed by the SLO-aware router: a replay by `slidingpolicy replay
--url` completes with every request routed (by our router, once the replicas have reported);
a malformed SLO is answered 400 naming the key; the policy's give-up notices reach replay's
client; a replica killed under streaming requests loses none silently (each completes, or
ends with an error event naming the failure), and later requests are served. The cluster is
stopped by its process group whatever happens."""

from __future__ import annotations

import asyncio
import csv
import json
import os
import re
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest
from slidingpolicy.replay.client import GAVE_UP, send_all
from slidingpolicy.replay.launcher import Server, free_port
from slidingpolicy.replay.requests import Completion

from slidingpolicy_ray.deployment import REPLICA_FAILED
from slidingpolicy_ray.router import RANKED

pytestmark = pytest.mark.e2e

READY_WITHIN = 300.0
"""Seconds the cluster may take to answer /health: a bound against a hang, not a timing."""

ARM = "slidingserve+[give_up_after=0.001,max_batch_tokens=64,learn=false]"
"""Requests whose TTFT deadline passes while they wait are given up with the notice."""

REPLICA = "ServeReplica:slidingpolicy:EngineReplica"
"""The process title of a replica's actor."""


@pytest.fixture(scope="module")
def cluster(model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The application on a local Ray cluster of 2 CPUs, 2 replicas of 4 requests at most
    each (so that 6 requests at once reach both)."""
    folder = tmp_path_factory.mktemp("ray")
    port = free_port()
    command = [sys.executable, "-m", "slidingpolicy_ray", "serve", str(model_dir),
               "--replicas", "2", "--router", "slo-aware", "--arm", ARM, "--num-cpus", "2",
               "--port", str(port), "--num-blocks", "256", "--max-ongoing", "4",
               "--served-model-name", "tiny"]  # fmt: skip
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "RAY_USAGE_STATS_ENABLED": "0"}
    server = Server("tiny", command, env, folder / "cluster.log", f"http://127.0.0.1:{port}")
    server.start()
    try:
        server.wait_ready(READY_WITHIN)
        yield server
    finally:
        server.stop()


def _post(url: str, body: object) -> tuple[int, str]:
    request = urllib.request.Request(f"{url}/v1/completions", json.dumps(body).encode())
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_a_replay_is_routed_by_the_slo_aware_router(cluster: Server, tmp_path: Path) -> None:
    """`slidingpolicy replay --url`: every request routed and answered (met, or given up
    with the notice); the router ranked by the replicas' reports."""
    replay = Path(sys.executable).parent / "slidingpolicy"
    command = [str(replay), "replay", "--url", cluster.url, "--rate", "4", "-n", "24",
               "--whole", "--out", str(tmp_path)]  # fmt: skip
    subprocess.run(command, check=True, timeout=180, capture_output=True)
    with (tmp_path / "requests.csv").open() as rows:
        failures = {row["failure"] for row in csv.DictReader(rows)}
    assert failures <= {"", GAVE_UP}
    log = cluster.log.read_text()
    counts = re.findall(
        rf"{RANKED} by slo-aware: (\d+), as Ray's default router ranks them: (\d+)", log
    )
    ours, ray = (int(n) for n in counts[-1])
    assert ours > ray


def test_a_malformed_slo_is_answered_400_naming_the_key(cluster: Server) -> None:
    body = {"model": "tiny", "prompt": [1, 2, 3], "max_tokens": 2, "stream": True,
            "vllm_xargs": {"ttft_slo": "soon"}}  # fmt: skip
    status, text = _post(cluster.url, body)
    assert status == 400
    assert "ttft_slo" in json.loads(text)["error"]["message"]


def test_the_policys_give_up_notices_reach_replay(cluster: Server) -> None:
    late = [Completion(f"g{i}", 0.0, tuple(range(1, 300)), 3, 1e-3, 0.5) for i in range(8)]
    measured = asyncio.run(send_all(cluster.url, "tiny", late, timeout=120.0))
    failures = [m.failure for m in measured]
    assert GAVE_UP in failures
    assert set(failures) <= {GAVE_UP, None}


async def _stream(url: str, tokens: int, started: asyncio.Event) -> str:
    """A streamed request's whole answer; `started` is set at its first event."""
    body = {"model": "tiny", "prompt": list(range(1, 21)), "max_tokens": tokens,
            "stream": True, "vllm_xargs": {"ttft_slo": 60.0, "tbt_slo": 60.0}}  # fmt: skip
    lines = []
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{url}/v1/completions", json=body) as response,
    ):
        async for line in response.content:
            lines.append(line.decode())
            if line.startswith(b"data:"):
                started.set()
    return "".join(lines)


def _replica_pids() -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and REPLICA in (entry / "cmdline").read_text():
                pids.append(int(entry.name))
        except OSError:
            continue
    return pids


def test_a_killed_replica_loses_no_request_silently(cluster: Server) -> None:
    """Six streams, at most four a replica, so each replica holds some; one replica killed
    once every stream has a token."""

    async def run() -> list[str]:
        started = [asyncio.Event() for _ in range(6)]
        streams = [asyncio.create_task(_stream(cluster.url, 1500, s)) for s in started]
        await asyncio.wait_for(asyncio.gather(*(s.wait() for s in started)), 120.0)
        pids = _replica_pids()
        assert len(pids) == 2
        os.kill(pids[0], signal.SIGKILL)
        return await asyncio.gather(*streams)

    ends = asyncio.run(run())
    for text in ends:
        assert text.rstrip().endswith("data: [DONE]")
        assert '"finish_reason": "length"' in text or REPLICA_FAILED in text
    assert any(REPLICA_FAILED in text for text in ends)
    after = [Completion(f"a{i}", 0.1 * i, tuple(range(1, 40)), 4, 60.0, 60.0) for i in range(8)]
    measured = asyncio.run(send_all(cluster.url, "tiny", after, timeout=120.0))
    assert [m.failure for m in measured] == [None] * len(after)
