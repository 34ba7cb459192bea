"""The launcher with a stand-in server process: ready when /health answers, stopped by its
process group (its child too), killed when it ignores SIGTERM, and a clear error when it
exits or never answers."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from slidingpolicy.errors import EngineError
from slidingpolicy.replay.launcher import Server, free_port, running

FAKE = Path(__file__).with_name("fake_engine.py")


def alive(pid: int) -> bool:
    """True while `pid` is a process that has not exited (zombies count as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z"


def fake_server(tmp_path: Path, **env: str) -> Server:
    port = free_port()
    environ = {**os.environ, "FAKE_ENGINE_DIR": str(tmp_path), **env}
    command = [sys.executable, str(FAKE), "-m", "slidingpolicy_vllm", "serve", "m", "--port",
               str(port)]  # fmt: skip
    return Server("fake", command, environ, tmp_path / "fake.log", f"http://127.0.0.1:{port}")


def pids(tmp_path: Path, server: Server) -> list[int]:
    port = server.url.rsplit(":", 1)[1]
    return [int(p) for p in (tmp_path / f"{port}.pids").read_text().split()]


def test_a_server_is_ready_by_health_and_stopped_with_its_children(tmp_path: Path) -> None:
    server = fake_server(tmp_path)
    server.start()
    try:
        server.wait_ready(60)
        usage = server.usage()
        assert usage is not None
        assert usage.processes >= 2
        assert usage.memory > 0
    finally:
        server.stop()
    assert not any(alive(p) for p in pids(tmp_path, server))
    assert not server.alive()


def test_a_server_that_ignores_sigterm_is_killed(tmp_path: Path) -> None:
    server = fake_server(tmp_path, FAKE_ENGINE_IGNORE_TERM="1")
    server.start()
    try:
        server.wait_ready(60)
    finally:
        server.stop(grace=0.5)
    assert not any(alive(p) for p in pids(tmp_path, server))


def test_a_server_that_exits_at_start_is_reported_with_its_code(tmp_path: Path) -> None:
    server = fake_server(tmp_path, FAKE_ENGINE_EXIT="3")
    server.start()
    with pytest.raises(EngineError, match=r"exited \(code 3\) before it was ready"):
        server.wait_ready(60)
    server.stop()


def test_a_server_that_never_answers_is_reported_after_the_timeout(tmp_path: Path) -> None:
    server = Server(
        "mute",
        [sys.executable, "-c", "import time; time.sleep(600)"],
        dict(os.environ),
        tmp_path / "mute.log",
        f"http://127.0.0.1:{free_port()}",
    )
    with running([server]):
        server.start()
        with pytest.raises(EngineError, match="not ready after 1 s"):
            server.wait_ready(1)
    assert not server.alive()


def test_servers_held_by_running_are_stopped_when_the_block_fails(tmp_path: Path) -> None:
    servers = [fake_server(tmp_path), fake_server(tmp_path)]

    def fail_while_running() -> None:
        with running(servers):
            for server in servers:
                server.start()
            for server in servers:
                server.wait_ready(60)
            raise RuntimeError("the run failed")

    with pytest.raises(RuntimeError, match="the run failed"):
        fail_while_running()
    for server in servers:
        assert not any(alive(p) for p in pids(tmp_path, server))


def test_a_command_that_cannot_run_is_one_clear_error(tmp_path: Path) -> None:
    server = Server("none", [str(tmp_path / "missing")], {}, tmp_path / "x.log", "http://x")
    with pytest.raises(EngineError, match="cannot run"):
        server.start()
