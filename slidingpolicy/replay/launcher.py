"""A server process in its own process group: started, waited for until /health answers 200,
and stopped by its process group id (SIGTERM, then SIGKILL after a grace period), so that the
workers a server spawns stop with it and nothing is left running.

`running` holds servers for a block and stops every one of them on the way out, whatever ends
the block (the end of the work, an error, Ctrl-C).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager, suppress
from pathlib import Path

import attrs

from slidingpolicy._paths import StrPath
from slidingpolicy.errors import EngineError

POLL = 0.5
"""Seconds between two looks at a starting server."""

GRACE = 30.0
"""Seconds a server has to stop after SIGTERM before its group is killed."""

CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@attrs.frozen(slots=True)
class Usage:
    """What a process group holds now: memory (proportional set size, bytes, shared pages
    split between their users) and CPU time used so far (seconds), over its processes."""

    memory: int
    cpu: float
    processes: int


def _members(group: int) -> list[tuple[Path, list[str]]]:
    """The /proc entry and stat fields (after the name) of each live process of `group`."""
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            fields = (entry / "stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if len(fields) > 12 and fields[2] == str(group) and fields[0] != "Z":
            found.append((entry, fields))
    return found


def group_usage(group: int) -> Usage | None:
    """The usage of process group `group`, from /proc; None where /proc lists none of it."""
    memory, ticks = 0, 0
    members = _members(group)
    for entry, fields in members:
        ticks += int(fields[11]) + int(fields[12])
        try:
            for line in (entry / "smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    memory += int(line.split()[1]) * 1024
        except OSError:
            continue
    return Usage(memory, ticks / CLOCK_TICKS, len(members)) if members else None


def member_memory(group: int) -> dict[str, int]:
    """The proportional set size (bytes) of each live process of `group`, by "name pid"."""
    found = {}
    for entry, _ in _members(group):
        try:
            name = (entry / "comm").read_text().strip()
            rollup = (entry / "smaps_rollup").read_text().splitlines()
        except OSError:
            continue
        pss = [int(line.split()[1]) * 1024 for line in rollup if line.startswith("Pss:")]
        found[f"{name} {entry.name}"] = sum(pss)
    return found


def _tail(path: Path, lines: int = 5) -> str:
    """The last `lines` lines of a log, joined by ' | ' for a one-line message."""
    try:
        text = path.read_text(errors="replace").splitlines()[-lines:]
    except OSError:
        return ""
    return " | ".join(line.strip() for line in text if line.strip())


class Server:
    """One server: `command` run with `env` in a new session (its own process group), its
    output to `log`, ready when `url`/health answers 200."""

    def __init__(
        self, name: str, command: Sequence[str], env: Mapping[str, str], log: StrPath, url: str
    ) -> None:
        self.name, self.command, self.env, self.url = name, command, env, url
        self.log = Path(log)
        self.process: subprocess.Popen[bytes] | None = None
        self.started = float("nan")
        self.ready_after = float("nan")
        """Seconds from its latest start to ready."""

    @property
    def pid(self) -> int:
        """The server's process id, which is also its process group's."""
        if self.process is None:
            raise EngineError(f"server {self.name!r} was not started")
        return self.process.pid

    def start(self) -> None:
        """Start the process; it inherits nothing from this terminal's process group."""
        self.log.parent.mkdir(parents=True, exist_ok=True)
        self.started = time.monotonic()
        with self.log.open("ab") as out:
            try:
                self.process = subprocess.Popen(
                    list(self.command),
                    env=dict(self.env),
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            except OSError as error:
                raise EngineError(
                    f"server {self.name!r}: cannot run {self.command[0]} ({error.strerror})"
                ) from None

    def alive(self) -> bool:
        """True while the process runs."""
        return self.process is not None and self.process.poll() is None

    def wait_ready(self, timeout: float) -> None:
        """Return once /health answers 200; an `EngineError` if the process exits first or
        `timeout` seconds pass."""
        started = time.monotonic()
        while time.monotonic() - started < timeout:
            if not self.alive():
                code = None if self.process is None else self.process.returncode
                raise EngineError(
                    f"server {self.name!r} exited (code {code}) before it was ready; "
                    f"{self.log}: {_tail(self.log)}"
                )
            if self._healthy():
                self.ready_after = time.monotonic() - self.started
                return
            time.sleep(POLL)
        raise EngineError(
            f"server {self.name!r} was not ready after {timeout:g} s; {self.log}: {_tail(self.log)}"
        )

    def _healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/health", timeout=POLL * 4) as response:
                return bool(response.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    def usage(self) -> Usage | None:
        """The server's process group's memory and CPU time now."""
        return None if not self.alive() else group_usage(self.pid)

    def stop(self, grace: float = GRACE) -> None:
        """Stop the whole process group: SIGTERM, then SIGKILL to what is left after `grace`
        seconds; returns when no process of the group is left."""
        if self.process is None:
            return
        group = self.process.pid
        _signal(group, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while _group_alive(group) and time.monotonic() < deadline:
            self.process.poll()
            time.sleep(0.1)
        if _group_alive(group):
            _signal(group, signal.SIGKILL)
        self.process.wait()
        while _group_alive(group):
            time.sleep(0.05)


def _signal(group: int, sig: signal.Signals) -> None:
    with suppress(ProcessLookupError):
        os.killpg(group, sig)


def _group_alive(group: int) -> bool:
    """True while a process of `group` is left, zombies aside where /proc can tell them."""
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    return not Path("/proc/self/stat").exists() or bool(_members(group))


def free_port() -> int:
    """A TCP port on 127.0.0.1 that no one listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def running(servers: Sequence[Server]) -> Iterator[Sequence[Server]]:
    """Hold `servers` for the block: each stopped on the way out, whatever ends the block."""
    with ExitStack() as stack:
        for server in servers:
            stack.callback(server.stop)
        yield servers
