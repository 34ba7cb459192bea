"""Hostile clients against a real server (`python -m slidingpolicy_vllm serve`, the tiny
model on 127.0.0.1): every malformed SLO is answered 400 with its key named; one request
that reaches the scheduler invalid (let past by `tests.leaky_door`, as a front end without
the door would) among 50 normal ones is finished alone with its reason, the policy plans at
least 99% of the steps, the server stays up, and `slidingpolicy check` passes the trace."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from slidingpolicy_vllm.refusal import CARRIES_ERROR
from tests.leaky_door import LEAK
from tests.test_server import Server, complete, health, post, serving
from tests.test_trace import check, read_once

pytestmark = [pytest.mark.engine, pytest.mark.e2e]

NORMAL = 50
HOSTILE = [
    ("ttft_slo", -1, "ttft_slo=-1.0 must be > 0"),
    ("ttft_slo", 0, "ttft_slo=0.0 must be > 0"),
    ("ttft_slo", "abc", "ttft_slo must be a number, got 'abc'"),
    ("ttft_slo", [1, 2], "ttft_slo must be a number, got [1, 2]"),
    ("ttft_slo", math.nan, "ttft_slo=nan must be finite"),
    ("ttft_slo", math.inf, "ttft_slo=inf must be finite"),
    ("ttft_slo", 1e308, "ttft_slo=1e+308 s is beyond 1e+10 s"),
    ("ttft_slo", False, "ttft_slo=0.0 must be > 0"),
    ("tbt_slo", 1e-9, "tbt_slo=1e-09 s is shorter than any step"),
    ("protected", "yes", "protected must be a bool, got 'yes'"),
    ("protected", 2, "protected must be a bool, got 2"),
]
"""Each value as the client sends it (JSON: NaN, Infinity, true, false) and what the 400
says. vLLM's request model turns a JSON boolean in `vllm_xargs` into 1 or 0 before any
plug-in sees it: `false` for an SLO is refused as 0 s, `true` for an SLO arrives as 1 s, a
valid SLO, and `true` for `protected` is read as the flag."""


@pytest.fixture
def leaky(model_dir: Path, tmp_path: Path) -> Iterator[Server]:
    with serving(
        model_dir, tmp_path, "--logits-processors", "tests.leaky_door:LeakyDoor"
    ) as running:
        yield running


def _body(model_dir: Path, i: int, xargs: dict[str, Any], stream: bool) -> dict[str, Any]:
    return {
        "model": str(model_dir),
        "prompt": [5 + (13 * i + j) % 400 for j in range(8 + (97 * i) % 200)],
        "max_tokens": 3 + i % 6,
        "ignore_eos": True,
        "stream": stream,
        "return_token_ids": True,
        "vllm_xargs": xargs,
    }


def test_hostile_slos_get_400_and_a_poisoned_request_is_finished_alone(
    leaky: Server, model_dir: Path
) -> None:
    port = leaky.port
    for i, (key, value, said) in enumerate(HOSTILE):
        status, answer = post(port, _body(model_dir, i, {key: value}, stream=False))
        assert status == 400, (key, value, answer)
        message = answer["error"]["message"]
        assert message.startswith(f"vllm_xargs: {said}"), message
        assert "(accepted: " in message
    print("a 400:", json.dumps(answer))
    status, answer = post(port, _body(model_dir, 0, {"ttft_slo": True}, stream=False))
    assert status == 200, "a JSON true arrives as 1: a valid SLO of 1 s"
    status, answer = post(port, _body(model_dir, 1, {"protected": True}, stream=False))
    assert status == 200, answer

    poison = _body(model_dir, 99, {"ttft_slo": 1e308, LEAK: 1}, stream=False)
    bodies = [_body(model_dir, i, {"ttft_slo": 2.0, "tbt_slo": 0.5}, True) for i in range(NORMAL)]
    with ThreadPoolExecutor(16) as pool:
        refused = pool.submit(post, port, poison)
        done = list(pool.map(lambda body: complete(port, body), bodies))
        status, answer = refused.result()
    assert done == [(3 + i % 6, "length") for i in range(NORMAL)]
    if CARRIES_ERROR:
        assert status == 400, answer
        reason = answer["error"]["message"]
    else:
        assert status == 200, answer
        assert answer["choices"][0]["finish_reason"] == "abort"
        reason = answer["choices"][0]["stop_reason"]
    print("the poisoned request's answer:", json.dumps(answer))
    assert reason.startswith("slidingpolicy cannot schedule request ")
    assert "ttft_slo=1e+308 s is beyond 1e+10 s" in reason
    assert health(port), "the server is alive"

    trace, lines = read_once(leaky.trace)
    planned = sum(line["fallback"] is None for line in lines)
    print(f"{planned} of {len(lines)} steps planned by the policy")
    assert planned >= 0.99 * len(lines)
    ids = {r["id"] for line in lines for r in line["state"]["requests"]}
    assert len(ids) == NORMAL + 2, "the 50, the SLO of 1 s, the protected one, not the poisoned"
    protected = {r["id"] for line in lines for r in line["state"]["requests"] if r["protected"]}
    assert len(protected) == 1, "a JSON true for protected reaches the policy as g_i = 1"
    checked = check(trace)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"{len(lines)} plans checked: 0 break an invariant, 0 malformed" in checked.stdout
