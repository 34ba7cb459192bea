"""A fake OpenAI-compatible completions server on 127.0.0.1, with controlled token times.

`FakeEngine` serves /health, /v1/models and streaming /v1/completions from a thread of the test
process. How it answers each completion is the test's `behave(body) -> Behaviour`: an HTTP
status, the delay before the first token, the gap before each next one, and whether to cut the
stream short. It logs, per prompt, when it received the request and when it wrote each token
(`time.perf_counter`), the oracle the client's measurements are held to.

Run as a script (`python fake_engine.py -m slidingpolicy_vllm serve MODEL ... --port P`), it is
a stand-in for a vLLM server the launcher starts: it writes its argv and pid (and its child's)
to FAKE_ENGINE_DIR, spawns a child process in its group, and serves until stopped; with
FAKE_ENGINE_IGNORE_TERM=1 it ignores SIGTERM, with FAKE_ENGINE_EXIT=N it exits at once with N,
with FAKE_ENGINE_STATUS=N it answers completions with that status.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import attrs

from slidingpolicy.embedding import GIVEN_UP_NOTICE


@attrs.frozen
class Behaviour:
    """How to answer one completion: `status`, then (if 200) one token after each of `delays`
    seconds (None: max_tokens tokens at once), `per_event` tokens to an event (the delay
    before an event is its first token's), then the notice that the policy gave the request
    up if `gave_up` names how it is told (`_notice`), and a final [DONE] unless `cut`."""

    status: int = 200
    delays: tuple[float, ...] | None = None
    per_event: int = 1
    cut: bool = False
    gave_up: str | None = None


@attrs.define
class Served:
    """What the fake did for one request: when it received it, and when it began to write
    each token (so no client can read a token before its time here)."""

    received: float
    written: list[float] = attrs.Factory(list)
    notice: float | None = None


NOTICE = f"{GIVEN_UP_NOTICE} 'r0': its TTFT deadline passed 5.0 s ago (give_up_after); retry it"


def _notice(series: str) -> dict[str, Any] | None:
    """The event by which a vLLM of `series` tells a streamed request's client the policy gave
    it up: 0.33 an error event; 0.32 none (it drops a last chunk with no token), the stream
    ends; "choice" a choice finished as aborted with the notice as its `stop_reason` (how 0.32
    answers a request that is not streamed)."""
    if series == "0.32":
        return None
    if series == "choice":
        choice = {"index": 0, "text": "", "token_ids": [], "finish_reason": "abort",
                  "stop_reason": NOTICE}  # fmt: skip
        return {"choices": [choice]}
    return {"error": {"message": NOTICE, "type": "BadRequestError", "code": 400}}


def prompt_key(body: dict[str, Any]) -> tuple[int, ...]:
    return tuple(body["prompt"])


def _stream(wfile: Any, behaviour: Behaviour, delays: tuple[float, ...], served: Served) -> None:
    """Write the events of one streamed completion (`Behaviour`), noting when each was written."""
    sent = 0
    while sent < len(delays):
        time.sleep(delays[sent])
        n = min(behaviour.per_event, len(delays) - sent)
        choice = {"index": 0, "text": "", "token_ids": [7] * n}
        served.written.extend([time.perf_counter()] * n)
        wfile.write(f"data: {json.dumps({'choices': [choice]})}\n\n".encode())
        wfile.flush()
        sent += n
    if behaviour.gave_up is not None:
        served.notice = time.perf_counter()
        event = _notice(behaviour.gave_up)
        if event is not None:
            wfile.write(f"data: {json.dumps(event)}\n\n".encode())
            wfile.flush()
    if not behaviour.cut:
        wfile.write(b"data: [DONE]\n\n")
        wfile.flush()


class FakeEngine:
    """The server, started on a free port of 127.0.0.1 until `stop`."""

    def __init__(self, behave: Callable[[dict[str, Any]], Behaviour]) -> None:
        self.behave = behave
        self.served: dict[tuple[int, ...], Served] = {}
        self.bodies: list[dict[str, Any]] = []
        engine = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                if self.path == "/health":
                    self._json(200, {})
                elif self.path == "/v1/models":
                    self._json(200, {"data": [{"id": "fake-model"}]})
                else:
                    self._json(404, {"error": "not found"})

            def do_POST(self) -> None:
                received = time.perf_counter()
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                engine.bodies.append(body)
                behaviour = engine.behave(body)
                if behaviour.status != 200:
                    self._json(behaviour.status, {"error": "fake failure"})
                    return
                served = Served(received)
                engine.served[prompt_key(body)] = served
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                delays = (
                    (0.0,) * body["max_tokens"] if behaviour.delays is None else behaviour.delays
                )
                try:
                    _stream(self.wfile, behaviour, delays, served)
                except (BrokenPipeError, ConnectionResetError):
                    return

            def _json(self, status: int, data: Any) -> None:
                text = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(text)))
                self.end_headers()
                self.wfile.write(text)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def start(self) -> FakeEngine:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def serve_as_process(argv: list[str]) -> None:
    """The stand-in vLLM server of the launcher tests (module docstring)."""
    folder = Path(os.environ["FAKE_ENGINE_DIR"])
    port = int(argv[argv.index("--port") + 1])
    tag = f"{port}"
    (folder / f"{tag}.argv").write_text(json.dumps(argv))
    if "FAKE_ENGINE_EXIT" in os.environ:
        sys.exit(int(os.environ["FAKE_ENGINE_EXIT"]))
    if os.environ.get("FAKE_ENGINE_IGNORE_TERM") == "1":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    (folder / f"{tag}.pids").write_text(f"{os.getpid()} {child.pid}")
    status = int(os.environ.get("FAKE_ENGINE_STATUS", "200"))
    engine = FakeEngine(lambda body: Behaviour(status=status))
    engine.server.server_close()
    engine.server = ThreadingHTTPServer(("127.0.0.1", port), engine.server.RequestHandlerClass)
    engine.server.daemon_threads = True
    engine.server.serve_forever()


if __name__ == "__main__":
    serve_as_process(sys.argv[1:])
