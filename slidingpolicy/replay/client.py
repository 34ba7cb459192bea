"""The open-loop client: every completion sent at its arrival time, every token timestamped.

Open loop: a request is sent at its arrival whatever the server is doing, as users arrive, so a
slow server builds a queue rather than slowing the arrivals. Each token's time is when the
client read its server-sent event, on the run's clock (`time.perf_counter`, seconds since the
run started). Token counts come from each event's `token_ids` (vLLM's `return_token_ids`); a
server that does not return them is counted one token per event with text.

Bounded: a request that has not finished `timeout` seconds after it was sent is cancelled and
counted as failed, so a run ends by its last arrival plus `timeout`. A request the policy gave
up on (`give_up_after`) ends with a notice in its stream; its time is kept, as the engine's.

A steady-state trial (`workloads.steady_state`) ends when its counted requests have: the
requests around them still waiting to be sent are not, and those in flight are cancelled
(their connections closed, as a client that leaves), failing with `NOT_NEEDED`.

Needs aiohttp (``pip install 'slidingpolicy[replay]'``).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Sequence
from typing import Any

import aiohttp
import attrs

from slidingpolicy.embedding import GIVEN_UP_NOTICE
from slidingpolicy.errors import EngineError
from slidingpolicy.replay.measure import NOT_NEEDED, Measured
from slidingpolicy.replay.requests import Completion

LEAD = 0.2
"""Seconds between starting a run and its clock's zero, so that the first send is on time."""

PROBE_TIMEOUT = 30.0
"""Seconds the server has to answer the probe before a run."""

GAVE_UP = "given up"
"""The failure of a request whose stream carried the notice that the policy gave it up, or
ended with no event at all (`_stream`)."""

READ_BUFFER = 2**20
"""Bytes a streamed event may hold (the first echoes the prompt's ids)."""

Clock = Callable[[], float]


def _tokens(event: dict[str, Any]) -> int:
    """Tokens carried by one streamed completion event."""
    count = 0
    for choice in event.get("choices") or ():
        ids = choice.get("token_ids")
        if isinstance(ids, list):
            count += len(ids)
        elif choice.get("text"):
            count += 1
    return count


def _failure(error: BaseException) -> str:
    """A short reason for a request that raised `error`."""
    if isinstance(error, TimeoutError):
        return "timeout"
    if isinstance(error, aiohttp.ClientConnectorError):
        return "cannot connect"
    if isinstance(error, aiohttp.ClientPayloadError | aiohttp.ServerDisconnectedError):
        return "connection lost"
    if isinstance(error, json.JSONDecodeError):
        return "malformed event"
    if isinstance(error, aiohttp.ClientResponseError):
        return f"http {error.status}"
    return type(error).__name__


def _gave_up(event: dict[str, Any]) -> bool:
    """Whether `event` tells that the policy gave the request up: the error's message (vLLM
    0.33) or a choice's `stop_reason` (0.32, a request not streamed) carries the notice."""
    reasons = [choice.get("stop_reason") for choice in event.get("choices") or ()]
    error = event.get("error")
    if isinstance(error, dict):
        reasons.append(error.get("message"))
    return any(isinstance(r, str) and r.startswith(GIVEN_UP_NOTICE) for r in reasons)


@attrs.define
class _Read:
    """What one stream told: a time per token, and when the give-up notice came, if it did."""

    tokens: list[float] = attrs.Factory(list)
    notice: float | None = None


async def _stream(response: aiohttp.ClientResponse, clock: Clock, read: _Read) -> str | None:
    """Read the event stream into `read`; the failure, if any.

    A stream that ends at once ([DONE] before any event) was finished by the engine with no
    output: that is how vLLM 0.32 ends a streamed request the policy gave up (it drops a last
    chunk that carries no token, and the notice with it), so it counts as the notice."""
    events = 0
    async for raw in response.content:
        now = clock()
        line = raw.strip()
        if not line.startswith(b"data:"):
            continue
        data = line[5:].strip()
        if data == b"[DONE]":
            if events == 0:
                read.notice = now
                return GAVE_UP
            return None
        events += 1
        event = json.loads(data)
        if _gave_up(event):
            read.notice = now
            return GAVE_UP
        if "error" in event:
            return "error event"
        read.tokens.extend([now] * _tokens(event))
    return "stream ended without [DONE]"


async def send(
    session: aiohttp.ClientSession,
    url: str,
    model: str,
    completion: Completion,
    clock: Clock,
    timeout: float,
) -> Measured:
    """Send `completion` at its arrival on `clock`, and measure it; cancelled, what it got
    so far, failing with `NOT_NEEDED` (sent at the cancel, if it was not yet)."""
    read = _Read()
    try:
        await asyncio.sleep(max(0.0, completion.arrival - clock()))
    except asyncio.CancelledError:
        return Measured(clock(), (), NOT_NEEDED)
    sent = clock()
    failure: str | None
    try:
        async with asyncio.timeout(timeout):
            async with session.post(
                f"{url}/v1/completions", json=completion.body(model)
            ) as response:
                if response.status != 200:
                    failure = f"http {response.status}"
                else:
                    failure = await _stream(response, clock, read)
    except (TimeoutError, aiohttp.ClientError, ValueError) as error:
        failure = _failure(error)
    except asyncio.CancelledError:
        return Measured(sent, tuple(read.tokens), NOT_NEEDED, read.notice)
    got = len(read.tokens)
    if failure is None and got != completion.max_tokens:
        failure = f"{'fewer' if got < completion.max_tokens else 'more'} tokens than asked"
    return Measured(sent, tuple(read.tokens), failure, read.notice)


async def send_all(
    url: str,
    model: str,
    completions: Sequence[Completion],
    timeout: float,
    on_done: Callable[[Measured], None] | None = None,
    counted: range | None = None,
) -> list[Measured]:
    """Send every completion at its arrival and measure them all (in the order given); with
    `counted` (a steady-state trial's window), only until those have finished, the others cut
    short then (module docstring). `on_done` is told of each counted one as it ends."""
    start = time.perf_counter() + LEAD
    window = range(len(completions)) if counted is None else counted

    def clock() -> float:
        return time.perf_counter() - start

    async def one(i: int, completion: Completion) -> Measured:
        measured = await send(session, url, model, completion, clock, timeout)
        if on_done is not None and i in window:
            on_done(measured)
        return measured

    connector = aiohttp.TCPConnector(limit=0, force_close=True)
    async with aiohttp.ClientSession(connector=connector, read_bufsize=READ_BUFFER) as session:
        tasks = [asyncio.create_task(one(i, c)) for i, c in enumerate(completions)]
        await asyncio.gather(*(tasks[i] for i in window))
        for task in tasks:
            task.cancel()
        return list(await asyncio.gather(*tasks))


async def _get_json(session: aiohttp.ClientSession, url: str) -> Any:
    async with session.get(url) as response:
        if response.status != 200:
            raise EngineError(f"{url} answered HTTP {response.status}, not a list of models")
        return await response.json(content_type=None)


async def probe(url: str, model: str | None) -> str:
    """The model to ask for (`model`, or the first the server lists), once the server has
    answered one short completion; an `EngineError` saying what went wrong otherwise."""
    timeout = aiohttp.ClientTimeout(total=PROBE_TIMEOUT)
    try:
        async with aiohttp.ClientSession(timeout=timeout) as session:
            if model is None:
                listed = await _get_json(session, f"{url}/v1/models")
                try:
                    model = str(listed["data"][0]["id"])
                except (KeyError, IndexError, TypeError):
                    raise EngineError(f"{url}/v1/models lists no model") from None
            test = Completion("probe", 0.0, (1, 2, 3, 4), 2, 60.0, 60.0)
            async with session.post(f"{url}/v1/completions", json=test.body(model)) as response:
                if response.status != 200:
                    body = " ".join((await response.text())[:200].split())
                    raise EngineError(
                        f"{url} answered HTTP {response.status} to a test completion: {body}"
                    )
                await response.read()
    except TimeoutError:
        raise EngineError(f"{url} did not answer within {PROBE_TIMEOUT:g} s") from None
    except aiohttp.ClientConnectorError as error:
        raise EngineError(f"cannot reach {url}: {error.os_error or error}") from None
    except aiohttp.ClientError as error:
        raise EngineError(f"{url}: {type(error).__name__}: {error}") from None
    return model


WARMUP = Completion("warmup", 0.0, tuple(range(1, 257)), 8, 60.0, 60.0)
"""A request sent before measuring, to let a new server allocate what its first steps need."""


async def warm(url: str, model: str, count: int, timeout: float) -> None:
    """Send `count` warm-up requests one after the other; their results are not kept."""
    for _ in range(count):
        await send_all(url, model, (WARMUP,), timeout)
