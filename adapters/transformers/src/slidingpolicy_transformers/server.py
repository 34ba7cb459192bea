"""The engine behind an OpenAI-compatible streaming API, the part of it `slidingpolicy replay`
speaks: `GET /health`, `GET /v1/models`, `POST /v1/completions` with a token-id prompt; and
`GET /metrics`, the policy's Prometheus metrics (`metrics`), as vLLM's adapter shows them.

A completion's body: ``model``, ``prompt`` (token ids), ``max_tokens`` (exactly that many
come out: the model has no end token), ``stream`` (server-sent events, one per token, each
with its ``token_ids``, then ``data: [DONE]``), and the request's SLOs in ``vllm_xargs``
(``ttft_slo``, ``tbt_slo`` in seconds, ``protected``), where vLLM's adapter reads them too.
A malformed body or SLO is answered HTTP 400 with one message naming the key (the SLO keys
read by `slidingpolicy.embedding.slo_on_wire`, as every door reads them). A request the policy
finishes alone (given up, or one it cannot represent) ends with an error event in the OpenAI
API's shape, the notice its message, as vLLM 0.33 sends it (`slidingpolicy replay` reads it).
A client that leaves has its request cancelled in the engine, quietly. Only the loopback
interface is served.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import AsyncIterator, Mapping
from typing import Any

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest
from slidingpolicy import InvalidRecordError
from slidingpolicy.embedding import slo_on_wire

from slidingpolicy_transformers.engine import Engine

LOOPBACK = ("127.0.0.1", "localhost", "::1")

ENGINE = web.AppKey("engine", Engine)
NAME = web.AppKey("name", str)


class BadRequestError(ValueError):
    """A request body the server refuses; the message names the key."""


def _int(body: Mapping[str, Any], key: str, low: int, high: int | None = None) -> int:
    value = body.get(key)
    if type(value) is not int or value < low or (high is not None and value > high):
        bound = f">= {low}" if high is None else f"in [{low}, {high}]"
        raise BadRequestError(f"{key}={value!r}: must be an int {bound}")
    return value


def parse_completion(body: object, vocab: int) -> tuple[list[int], int, bool, object]:
    """The prompt, max_tokens, stream flag and SLO keys (``vllm_xargs``, checked) of a
    completion body; `BadRequestError` naming the key otherwise."""
    if not isinstance(body, dict):
        raise BadRequestError("the body must be a JSON object")
    prompt = body.get("prompt")
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], list):
        prompt = prompt[0]
    if not isinstance(prompt, list) or not prompt:
        raise BadRequestError("prompt: must be a non-empty list of token ids")
    if not all(type(t) is int and 0 <= t < vocab for t in prompt):
        raise BadRequestError(f"prompt: every token id must be an int in [0, {vocab})")
    max_tokens = _int(body, "max_tokens", 1)
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise BadRequestError(f"stream={stream!r}: must be true or false")
    slo = body.get("vllm_xargs")
    try:
        slo_on_wire(slo)
    except InvalidRecordError as error:
        raise BadRequestError(str(error)) from None
    return prompt, max_tokens, stream, slo


def token_event(request_id: str, model: str, tokens: list[int], finish: str | None) -> bytes:
    """A server-sent event of a stream: a request's new `tokens`, and its `finish` reason
    (None until the last)."""
    document = {
        "id": request_id,
        "object": "text_completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "text": "", "token_ids": tokens, "finish_reason": finish}],
    }
    return f"data: {json.dumps(document)}\n\n".encode()


def error_document(status: int, message: str) -> dict[str, Any]:
    """An error in the OpenAI API's shape."""
    kind = "invalid_request_error" if status == 400 else "server_error"
    return {"error": {"message": message, "type": kind, "code": status}}


def error_event(message: str) -> bytes:
    """The server-sent event that ends a stream the engine failed: an error in the OpenAI
    API's shape, `message` its message (a notice, which `slidingpolicy replay` reads)."""
    return f"data: {json.dumps(error_document(400, message))}\n\n".encode()


def _error(status: int, message: str) -> web.Response:
    return web.json_response(error_document(status, message), status=status)


_IDS = itertools.count()


async def completions(request: web.Request) -> web.StreamResponse:
    """`POST /v1/completions`."""
    engine = request.app[ENGINE]
    try:
        body = await request.json()
    except json.JSONDecodeError:
        return _error(400, "the body is not JSON")
    try:
        prompt, max_tokens, stream, slo = parse_completion(body, engine.vocab_size)
    except BadRequestError as error:
        return _error(400, str(error))
    request_id = f"cmpl-{next(_IDS)}"
    outputs: asyncio.Queue[Any] = asyncio.Queue()
    engine.manager.register_result_handler(request_id, outputs.put_nowait)
    try:
        engine.add(request_id, prompt, max_tokens, slo)
    except InvalidRecordError as error:
        return _error(400, str(error))
    except RuntimeError as error:
        return _error(503, str(error))
    try:
        if stream:
            return await _stream(request, request_id, outputs)
        tokens = [token async for new in token_stream(outputs) for token in new]
    except asyncio.CancelledError:
        engine.cancel(request_id)
        raise
    except RuntimeError as error:
        return _error(500, str(error))
    choice = {"index": 0, "text": "", "token_ids": tokens, "finish_reason": "length"}
    document = {"id": request_id, "object": "text_completion", "choices": [choice]}
    return web.json_response({**document, "model": request.app[NAME]})


async def token_stream(outputs: asyncio.Queue[Any]) -> AsyncIterator[list[int]]:
    """The new tokens of each output of a request until it finishes (an empty list last);
    `RuntimeError` when the engine failed it."""
    sent = 0
    while True:
        output = await outputs.get()
        if output.error is not None:
            raise RuntimeError(output.error)
        new = list(output.generated_tokens[sent:])
        sent += len(new)
        if new:
            yield new
        if output.is_finished():
            return


async def _stream(
    request: web.Request, request_id: str, outputs: asyncio.Queue[Any]
) -> web.StreamResponse:
    """Stream a request's tokens as server-sent events, one per output, then [DONE]; a request
    the engine failed ends with an error event. A client that left (its connection reset) has
    its request cancelled in the engine, and the stream ends there."""
    name = request.app[NAME]
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    try:
        try:
            async for new in token_stream(outputs):
                await response.write(token_event(request_id, name, new, None))
            await response.write(token_event(request_id, name, [], "length"))
        except RuntimeError as error:
            await response.write(error_event(str(error)))
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
    except ConnectionResetError:
        request.app[ENGINE].cancel(request_id)
    return response


async def health(request: web.Request) -> web.Response:
    """`GET /health`: 200 while the engine runs."""
    if request.app[ENGINE].running():
        return web.Response(text="ok")
    return web.Response(status=503, text="the engine is not running")


async def models(request: web.Request) -> web.Response:
    """`GET /v1/models`: the one model served."""
    return web.json_response(
        {"object": "list", "data": [{"id": request.app[NAME], "object": "model"}]}
    )


async def metrics(request: web.Request) -> web.Response:
    """`GET /metrics`: prometheus_client's default registry (the policy's metrics among
    them), in Prometheus' text format."""
    return web.Response(
        body=generate_latest(REGISTRY), headers={"Content-Type": CONTENT_TYPE_LATEST}
    )


def application(engine: Engine, name: str) -> web.Application:
    """The server of `engine`'s model, named `name`; the engine stops with the server."""
    app = web.Application(client_max_size=2**24)
    app[ENGINE], app[NAME] = engine, name
    app.router.add_get("/health", health)
    app.router.add_get("/v1/models", models)
    app.router.add_get("/metrics", metrics)
    app.router.add_post("/v1/completions", completions)

    async def stop(_: web.Application) -> None:
        engine.stop()

    app.on_shutdown.append(stop)
    return app


def serve(engine: Engine, name: str, host: str, port: int) -> None:
    """Start the engine and serve it on `host`:`port` (loopback only) until SIGTERM/SIGINT."""
    if host not in LOOPBACK:
        raise ValueError(f"--host {host}: the server binds to the loopback interface only")
    engine.start()
    web.run_app(application(engine, name), host=host, port=port, print=None)
