"""The deployments: replicas that each host transformers' continuous batching with a
slidingpolicy scheduler (`EngineReplica`), behind an OpenAI-compatible HTTP door (`Door`).

A replica is `slidingpolicy_transformers`' engine (its `Engine`, its server's stream pieces):
it streams each request's new tokens, and ends a request its policy finished alone (given
up, or one it cannot represent) with the notice, as the transformers server does; it
publishes its policy's report (`PolicyLoop.report`, on the wall clock) through
`record_routing_stats`, which `router.SloAwareRequestRouter` reads.

The door serves what `slidingpolicy replay --url` speaks (`GET /health`, `GET /v1/models`,
`POST /v1/completions`, streamed): it checks the body as the transformers server does (a
malformed body or SLO is answered 400 with one message naming the key), then calls the
replicas through a handle, so that Ray's request router sees the body and ranks the
replicas for it. A replica that dies under a request is not lost silently: a request that
had no token yet is sent once more (to a replica alive; Ray drops the dead one), and one that
had tokens, or failed twice, ends with an error event in the OpenAI API's shape whose message
names the failure (`replica_failed_notice`), which `replay` reads as the request's failure.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from ray import serve
from slidingpolicy import InvalidRecordError
from slidingpolicy_transformers.engine import Engine, EngineSettings
from slidingpolicy_transformers.server import (
    BadRequestError,
    error_document,
    error_event,
    parse_completion,
    token_event,
    token_stream,
)
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse

from slidingpolicy_ray.choice import on_wall_clock, stats_of

REPLICA_FAILED = "slidingpolicy-ray: the replica serving request"
"""How the message of a request whose replica failed under it begins."""

TOKENS, ERROR = "tokens", "error"
"""What a replica yields for a request: (TOKENS, new token ids) or (ERROR, the notice)."""


def replica_failed_notice(request_id: str, error: BaseException) -> str:
    """The message a client reads when the replica of its request failed under it."""
    return (
        f"{REPLICA_FAILED} {request_id!r} failed ({type(error).__name__}: {error!s:.200}); retry it"
    )


class EngineReplica:
    """One replica: an `Engine` of `settings` (`EngineSettings` as keywords)."""

    def __init__(self, settings: dict[str, Any]) -> None:
        self.engine = Engine(EngineSettings(**{**settings, "model": Path(settings["model"])}))
        self.engine.start()
        self.ids = itertools.count()

    async def generate(self, body: dict[str, Any]) -> AsyncIterator[tuple[str, Any]]:
        """A checked completion body's new tokens as they come, then nothing (it finished)
        or an (ERROR, notice) last (its policy finished it alone, or the engine failed it)."""
        engine = self.engine
        prompt, max_tokens, _, slo = parse_completion(body, engine.vocab_size)
        request_id = f"cmpl-{next(self.ids)}"
        outputs: asyncio.Queue[Any] = asyncio.Queue()
        engine.manager.register_result_handler(request_id, outputs.put_nowait)
        try:
            engine.add(request_id, prompt, max_tokens, slo)
        except (InvalidRecordError, RuntimeError) as error:
            yield ERROR, str(error)
            return
        try:
            async for new in token_stream(outputs):
                yield TOKENS, new
        except RuntimeError as error:
            yield ERROR, str(error)
        except asyncio.CancelledError:
            engine.cancel(request_id)
            raise

    def record_routing_stats(self) -> dict[str, Any]:
        """The policy's report on the wall clock, for the router; nothing before the engine
        built its scheduler (the router then ranks as Ray's default router does)."""
        loop = self.engine.loop
        if loop is None:
            return {}
        report = loop.report()
        return stats_of(on_wall_clock(report, time.time() - loop.clock.now()))

    def check_health(self) -> None:
        """Ray's health check: the engine's generation thread runs."""
        if not self.engine.running():
            raise RuntimeError("the engine's generation thread stopped")

    def __del__(self) -> None:
        engine = getattr(self, "engine", None)
        if engine is not None:
            engine.stop()


class Door:
    """The HTTP door of the model named `name` (module docstring): checks bodies against the
    model's vocabulary of `vocab` ids, and streams from `replicas` (a handle)."""

    def __init__(self, replicas: Any, name: str, vocab: int) -> None:
        self.replicas, self.name, self.vocab = replicas, name, vocab
        self.ids = itertools.count()

    async def __call__(self, request: Request) -> Response:
        """Route by path: /health, /v1/models, /v1/completions."""
        path = request.url.path.rstrip("/")
        if path == "/health" and request.method == "GET":
            return PlainTextResponse("ok")
        if path == "/v1/models" and request.method == "GET":
            data = [{"id": self.name, "object": "model"}]
            return JSONResponse({"object": "list", "data": data})
        if path == "/v1/completions" and request.method == "POST":
            return await self.completions(request)
        return JSONResponse(error_document(404, f"no route {path}"), status_code=404)

    async def completions(self, request: Request) -> Response:
        """`POST /v1/completions`."""
        try:
            body = json.loads(await request.body())
        except json.JSONDecodeError:
            return JSONResponse(error_document(400, "the body is not JSON"), status_code=400)
        try:
            _, _, stream, _ = parse_completion(body, self.vocab)
        except BadRequestError as error:
            return JSONResponse(error_document(400, str(error)), status_code=400)
        request_id = f"cmpl-{next(self.ids)}"
        if stream:
            events = self.events(request_id, body)
            return StreamingResponse(events, media_type="text/event-stream")
        tokens: list[int] = []
        async for kind, value in self.outputs(request_id, body):
            if kind == ERROR:
                return JSONResponse(error_document(500, value), status_code=500)
            tokens.extend(value)
        choice = {"index": 0, "text": "", "token_ids": tokens, "finish_reason": "length"}
        document = {"id": request_id, "object": "text_completion", "model": self.name}
        return JSONResponse({**document, "choices": [choice]})

    async def events(self, request_id: str, body: dict[str, Any]) -> AsyncIterator[bytes]:
        """The server-sent events of a streamed request, as the transformers server sends
        them: one per output, the last one's finish reason ``length`` or an error, then
        [DONE]."""
        failed = False
        async for kind, value in self.outputs(request_id, body):
            if kind == ERROR:
                failed = True
                yield error_event(value)
            else:
                yield token_event(request_id, self.name, value, None)
        if not failed:
            yield token_event(request_id, self.name, [], "length")
        yield b"data: [DONE]\n\n"

    async def outputs(
        self, request_id: str, body: dict[str, Any]
    ) -> AsyncIterator[tuple[str, Any]]:
        """A request's outputs from a replica (`EngineReplica.generate`); a replica that
        fails under it before its first token is replaced once (module docstring)."""
        for attempt in (1, 2):
            got = False
            try:
                async for kind, value in self.replicas.options(stream=True).generate.remote(body):
                    got = got or kind == TOKENS
                    yield kind, value
                return
            except Exception as error:
                if got or attempt == 2:
                    yield ERROR, replica_failed_notice(request_id, error)
                    return


Replica = serve.deployment(name="EngineReplica")(EngineReplica)
"""The replica deployment; `app.application` sets its replicas and router."""

Ingress = serve.deployment(name="Door")(Door)
"""The door deployment."""
