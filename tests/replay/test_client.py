"""The client against a fake engine whose token times are known: what it measures is what the
engine produced (the engine's own log is the oracle), failures are counted by reason, and a
request that outlives its timeout is cancelled."""

from __future__ import annotations

import asyncio
import socket
import time
from typing import Any

import numpy as np
import pytest

from slidingpolicy.errors import EngineError
from slidingpolicy.metrics import percentile
from slidingpolicy.replay.client import GAVE_UP, probe, send_all
from slidingpolicy.replay.measure import NOT_NEEDED, Measured, failures, judge
from slidingpolicy.replay.requests import Completion, completions
from slidingpolicy.workloads import RequestSpec, Window, Workload
from tests.replay.conftest import Start
from tests.replay.fake_engine import Behaviour, prompt_key

TOLERANCE = 0.25
"""Seconds a client's reading of a token may trail the engine's writing of it (loopback, one
process, a busy machine). It can never precede it: the client notes the send before the
engine receives, and a token after the engine wrote it, on the same clock. Delay only makes a
token later, so a miss below stays a miss; every token that is met is met by over 0.35 s."""

SLO_TTFT, SLO_TBT = 0.5, 0.25

BEHAVIOURS = {
    "fast": Behaviour(delays=(0.01, 0.01, 0.01, 0.01)),
    "late first token": Behaviour(delays=(0.8, 0.01, 0.01, 0.01)),
    "late third token": Behaviour(delays=(0.01, 0.01, 1.3, 0.01)),
    "long gap within the slack": Behaviour(delays=(0.01, 0.01, 0.6, 0.01)),
    "two per event": Behaviour(delays=(0.02, 0.02, 0.02, 0.02), per_event=2),
    "cut short": Behaviour(delays=(0.01, 0.01), cut=True),
    "server error": Behaviour(status=500),
}
MEETS = {"fast": True, "late first token": False, "late third token": False,
         "long gap within the slack": True, "two per event": True, "cut short": False,
         "server error": False}  # fmt: skip
"""Eq. 1 on the engine's times: token k due by a + 0.5 s + (k − 1)·0.25 s, so a 0.6 s gap
after two early tokens is within the slack (due by 1.0 s), while 1.3 s is not."""


def _eq_1(request: RequestSpec, m: Measured, served: Any, name: str) -> tuple[bool, float]:
    """Eq. 1 on the engine's own log, from the request's arrival (a client that sent it late
    on a busy machine makes it later): whether every token met its deadline, and by how far
    the closest token was from its deadline (the client reads a token up to TOLERANCE late)."""
    if served is None or not served.written or name in ("cut short", "server error"):
        return False, float("inf")
    start = m.sent - request.arrival - served.received
    slack = [
        request.ttft_slo + k * request.tbt_slo - (start + written)
        for k, written in enumerate(served.written)
    ]
    return min(slack) >= 0, min(abs(s) for s in slack)


def workload_of(names: list[str]) -> Workload:
    return Workload(
        "w",
        tuple(
            RequestSpec(f"r{i}", 0.05 * i, 16, 4, SLO_TTFT, SLO_TBT, "chat")
            for i in range(len(names))
        ),
    )


def run(url: str, sent: tuple[Completion, ...], timeout: float = 30.0) -> list[Measured]:
    return asyncio.run(send_all(url, "fake-model", sent, timeout))


def test_measured_token_times_are_the_engines_and_judged_by_eq_1(fake_engine: Start) -> None:
    names = list(BEHAVIOURS)
    workload = workload_of(names)
    sent = completions(workload, seed=3)
    by_prompt = {c.prompt: BEHAVIOURS[n] for c, n in zip(sent, names, strict=True)}
    engine = fake_engine(lambda body: by_prompt[prompt_key(body)])
    measured = run(engine.url, sent)
    for completion, m, name in zip(sent, measured, names, strict=True):
        if name == "server error":
            assert m.tokens == ()
            continue
        served = engine.served[completion.prompt]
        assert len(m.tokens) == len(served.written), name
        for client, written in zip(m.tokens, served.written, strict=True):
            lag = (client - m.sent) - (written - served.received)
            assert 0 <= lag < TOLERANCE, name
    metrics, outcome = judge(workload, measured)
    expected = [_eq_1(r, m, engine.served.get(c.prompt), n) for r, c, m, n in
                zip(workload.requests, sent, measured, names, strict=True)]  # fmt: skip
    judged = zip(outcome.attained.tolist(), expected, names, strict=True)
    for attained, (meets, margin), name in judged:
        if margin > TOLERANCE:
            assert attained == meets, name
    if max(m.sent - r.arrival for r, m in zip(workload.requests, measured, strict=True)) < 0.1:
        assert outcome.attained.tolist() == [MEETS[n] for n in names]
        assert metrics.attainment == sum(MEETS.values()) / len(names)
    ttfts = [
        m.sent - r.arrival + engine.served[c.prompt].written[0] - engine.served[c.prompt].received
        for r, c, m in zip(workload.requests, sent, measured, strict=True)
        if m.tokens
    ]
    assert 0 <= metrics.ttft_p50 - percentile(np.array(ttfts), 50) < TOLERANCE
    assert failures(workload, measured) == {"http 500": 1, "stream ended without [DONE]": 1}
    tbt_met = outcome.tbt_attained.tolist()
    assert tbt_met[names.index("long gap within the slack")] is False


@pytest.mark.parametrize("series", ["0.32", "0.33", "choice"])
def test_a_notice_that_the_policy_gave_up_is_read_with_its_time(
    fake_engine: Start, series: str
) -> None:
    gives_up = Behaviour(delays=(), gave_up=series)
    engine = fake_engine(lambda body: gives_up if len(body["prompt"]) == 16 else Behaviour())
    workload = Workload(
        "w", (RequestSpec("r0", 0.0, 16, 4, 1.0, 0.1, "chat"),
              RequestSpec("r1", 0.0, 17, 2, 1.0, 0.1, "chat")),
    )  # fmt: skip
    sent = completions(workload, seed=0)
    measured = run(engine.url, sent)
    assert failures(workload, measured) == {GAVE_UP: 1}
    given_up, served = measured
    assert given_up.tokens == ()
    assert served.notice is None
    notice = engine.served[sent[0].prompt].notice
    assert notice is not None
    assert given_up.notice is not None
    lag = (given_up.notice - given_up.sent) - (notice - engine.served[sent[0].prompt].received)
    assert 0 <= lag < TOLERANCE
    metrics, outcome = judge(workload, measured)
    assert metrics.given_up == 1
    assert outcome.given_up[0] == given_up.notice
    assert not outcome.attained[0]
    assert outcome.attained[1]


def test_each_request_carries_its_prompt_length_and_slos(fake_engine: Start) -> None:
    engine = fake_engine(lambda body: Behaviour())
    workload = Workload(
        "w",
        (
            RequestSpec("r0", 0.0, 40, 3, 1.0, 0.05, "chat"),
            RequestSpec("r1", 0.01, 700, 2, 3.0, 0.05, "documents"),
        ),
    )
    run(engine.url, completions(workload, seed=0))
    bodies = sorted(engine.bodies, key=lambda b: len(b["prompt"]))
    assert [len(b["prompt"]) for b in bodies] == [40, 700]
    assert [b["max_tokens"] for b in bodies] == [3, 2]
    assert [b["vllm_xargs"] for b in bodies] == [
        {"ttft_slo": 1.0, "tbt_slo": 0.05},
        {"ttft_slo": 3.0, "tbt_slo": 0.05},
    ]
    for body in bodies:
        assert body["stream"] is body["ignore_eos"] is body["return_token_ids"] is True
        assert all(1 <= t < 512 for t in body["prompt"])


def test_a_request_past_its_timeout_is_cancelled_and_counted(fake_engine: Start) -> None:
    engine = fake_engine(lambda body: Behaviour(delays=(0.01, 60.0)))
    workload = workload_of(["slow"])
    measured = run(engine.url, completions(workload, seed=0), timeout=0.5)
    assert failures(workload, measured) == {"timeout": 1}
    assert len(measured[0].tokens) == 1
    assert not judge(workload, measured)[1].attained[0]


def test_a_trial_ends_when_its_counted_requests_have_and_cuts_the_rest_short(
    fake_engine: Start,
) -> None:
    """A warm-up request still streaming and a tail request not yet due when the window's
    request has finished: the first is cut off, the second never sent, neither counted."""
    slow = Behaviour(delays=(0.01, 60.0))
    engine = fake_engine(lambda body: slow if len(body["prompt"]) == 30 else Behaviour())
    workload = Workload(
        "w",
        (
            RequestSpec("w0", 0.0, 30, 2, 60.0, 60.0, "chat"),
            RequestSpec("r0", 0.05, 16, 2, 1.0, 0.5, "chat"),
            RequestSpec("t0", 20.0, 16, 2, 1.0, 0.5, "chat"),
        ),
        Window(1, 1, 0.05, 21.0),
    )
    told: list[Measured] = []
    began = time.monotonic()
    measured = asyncio.run(
        send_all(
            engine.url,
            "fake-model",
            completions(workload, seed=0),
            60.0,
            on_done=told.append,
            counted=workload.counted,
        )
    )
    assert time.monotonic() - began < 10.0
    assert [m.failure for m in measured] == [NOT_NEEDED, None, NOT_NEEDED]
    assert told == [measured[1]]
    assert len(measured[0].tokens) == 1
    assert measured[2].tokens == ()
    assert len(engine.bodies) == 2
    assert failures(workload, measured) == {}
    assert judge(workload, measured)[0].attainment == 1.0


def test_a_server_that_is_down_fails_every_request_as_refused() -> None:
    workload = workload_of(["a", "b"])
    measured = run(f"http://127.0.0.1:{closed_port()}", completions(workload, seed=0))
    assert failures(workload, measured) == {"cannot connect": 2}


def closed_port() -> int:
    """A port of 127.0.0.1 with nothing listening on it."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def test_probe_names_the_model_the_server_lists(fake_engine: Start) -> None:
    engine = fake_engine(lambda body: Behaviour())
    assert asyncio.run(probe(engine.url, None)) == "fake-model"
    assert asyncio.run(probe(engine.url, "other")) == "other"


@pytest.mark.parametrize(
    ("behave", "match"),
    [
        (lambda body: Behaviour(status=500), "HTTP 500 to a test completion"),
        (lambda body: Behaviour(status=404), "HTTP 404"),
    ],
)
def test_probe_says_what_a_failing_server_answered(
    fake_engine: Start, behave: Any, match: str
) -> None:
    engine = fake_engine(behave)
    with pytest.raises(EngineError, match=match):
        asyncio.run(probe(engine.url, None))


def test_probe_says_when_nothing_listens() -> None:
    with pytest.raises(EngineError, match="cannot reach"):
        asyncio.run(probe(f"http://127.0.0.1:{closed_port()}", None))
