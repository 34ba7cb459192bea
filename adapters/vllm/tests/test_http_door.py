"""The HTTP door: a completion whose `vllm_xargs` hold a malformed SLO is answered 400 with the
door's message before the app sees it, streamed or not; every other request reaches the app
with its body whole (also when it comes in several parts)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from slidingpolicy.records.slo import RANGES

from slidingpolicy_vllm.http_door import SloMiddleware
from tests.test_door import HOSTILE


class App:
    """An ASGI app that records the body it read and answers 200."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        body, more = b"", True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        self.bodies.append(body)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})


def _call(body: bytes, path: str = "/v1/completions", parts: int = 1) -> tuple[App, int, Any]:
    """POST `body` (in `parts` messages) through the middleware: the app, status and answer."""
    app, sent = App(), []
    size = max(1, -(-len(body) // parts))
    chunks = [body[i : i + size] for i in range(0, len(body), size)] or [b""]
    messages = [
        {"type": "http.request", "body": c, "more_body": i < len(chunks) - 1}
        for i, c in enumerate(chunks)
    ]

    async def receive() -> Any:
        return messages.pop(0)

    async def send(message: Any) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": path}
    asyncio.run(SloMiddleware(app)(scope, receive, send))
    status = sent[0]["status"]
    answer = b"".join(m.get("body", b"") for m in sent[1:])
    return app, status, json.loads(answer) if status == 400 else answer


def _body(xargs: object, stream: bool = True) -> bytes:
    return json.dumps(
        {"model": "m", "prompt": [1, 2], "stream": stream, "vllm_xargs": xargs}
    ).encode()


@pytest.mark.parametrize(("key", "value", "said"), HOSTILE)
@pytest.mark.parametrize("stream", [True, False])
def test_a_hostile_slo_gets_400_before_the_app(
    key: str, value: object, said: str, stream: bool
) -> None:
    app, status, answer = _call(_body({"ttft_slo": 2.0, key: value}, stream), parts=3)
    assert status == 400
    assert app.bodies == [], "vLLM never sees it"
    message = answer["error"]["message"]
    assert message.startswith(f"vllm_xargs: {said}")
    assert message.endswith(f"(accepted: {RANGES[key]})")
    assert answer["error"]["code"] == 400


def test_a_json_true_for_an_slo_is_refused_and_for_protected_is_a_flag() -> None:
    assert _call(_body({"ttft_slo": True}))[1] == 400
    assert _call(_body({"protected": True}))[1] == 200


def test_protected_sent_as_one_is_the_flag_as_the_admission_door_reads_it() -> None:
    """It failed before: this door refused 1 while the admission door read it as true."""
    assert _call(_body({"protected": 1}))[1] == 200
    assert _call(_body({"protected": 2}))[1] == 400


def test_vllm_xargs_that_are_not_an_object_get_400_naming_them() -> None:
    app, status, answer = _call(_body("not an object"), parts=3)
    assert status == 400
    assert app.bodies == []
    assert answer["error"]["message"].startswith("request: vllm_xargs=")


@pytest.mark.parametrize(
    ("body", "path"),
    [
        (_body({"ttft_slo": 0.5, "tbt_slo": 0.05, "protected": False}), "/v1/completions"),
        (_body({"other_plugin": [1, "x"]}), "/v1/chat/completions"),
        (json.dumps({"model": "m", "prompt": "hi"}).encode(), "/v1/completions"),
        (b"{not json", "/v1/completions"),
        (_body({"ttft_slo": -1}), "/v1/models"),
    ],
)
def test_every_other_request_reaches_the_app_whole(body: bytes, path: str) -> None:
    app, status, _ = _call(body, path, parts=4)
    assert status == 200
    assert app.bodies == [body]
