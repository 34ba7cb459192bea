"""The door at the HTTP level: a completion whose `vllm_xargs` hold a malformed or out-of-range
SLO is answered HTTP 400 before vLLM reads it, streamed or not.

The logits-processor door (`door.SloDoor`) runs when vLLM admits the request; for a streamed
request vLLM 0.32 and 0.33 do that once the stream has begun, after the status line (200)
is sent, so the refusal arrives as an error event. This ASGI middleware (vLLM's
`--middleware`, which `python -m slidingpolicy_vllm serve` adds with the door) reads the
JSON body of every POST to a `/completions` path first and answers 400 with the door's
message, in the OpenAI API's error shape, read by the one reader of SLOs on the wire
(`slidingpolicy.embedding.slo_on_wire`). It reads the JSON as the client sent it, so a JSON
true for `ttft_slo` is refused here (vLLM's request model would make it 1 s). A body that is
not a JSON object, or holds no `vllm_xargs`, goes on to vLLM unchanged, which judges it as it
always does.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from slidingpolicy import InvalidRecordError
from slidingpolicy.embedding import slo_on_wire

from slidingpolicy_vllm.door import MIDDLEWARE

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

__all__ = ["MIDDLEWARE", "SloMiddleware", "refusal"]


def refusal(body: bytes) -> str | None:
    """The door's message for a completion body whose `vllm_xargs` hold an SLO no request may
    have; None for any other body."""
    try:
        request = json.loads(body)
    except ValueError:
        return None
    if not isinstance(request, dict):
        return None
    try:
        slo_on_wire(request.get("vllm_xargs"))
    except InvalidRecordError as error:
        return str(error)
    return None


class SloMiddleware:
    """ASGI middleware: POSTs to a `/completions` path with a malformed SLO get HTTP 400."""

    def __init__(self, app: App) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        checked = scope["type"] == "http" and scope.get("method") == "POST"
        if not checked or not str(scope.get("path", "")).endswith("/completions"):
            await self.app(scope, receive, send)
            return
        messages, body = [], b""
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                break
            body += message.get("body", b"")
            if not message.get("more_body", False):
                break
        problem = refusal(body)
        if problem is not None:
            await _bad_request(send, problem)
            return

        async def replay() -> Message:
            return messages.pop(0) if messages else await receive()

        await self.app(scope, replay, send)


async def _bad_request(send: Send, message: str) -> None:
    """Answer 400 with `message` in the OpenAI API's error shape (as vLLM's own)."""
    error = {"message": message, "type": "BadRequestError", "param": None, "code": 400}
    payload = json.dumps({"error": error}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(payload))]
    await send({"type": "http.response.start", "status": 400, "headers": headers})
    await send({"type": "http.response.body", "body": payload})
