"""The arms of a transformers server: its continuous batching's own schedulers (``native``, its
FIFO, and ``prefill_first``), or a registered policy run by the adapter.

An arm is started as ``<python> -m slidingpolicy_transformers serve MODEL --arm ARM ...`` from
the environment that holds transformers and the adapter (`slidingpolicy-transformers` with its
``serve`` extra): random weights from the folder's `config.json`, no prefix sharing,
synchronous steps, on 127.0.0.1, torch on one thread (`THREADS`). Every arm gets a KV cache of
`NUM_BLOCKS` blocks (sized from free memory instead, transformers takes a minute to start on a
CPU) and its step's token limit written out (`batch_tokens`), so that the command results.json
records says it; a policy arm gets its predictor and trace in ``--adapter-config``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from slidingpolicy._paths import StrPath
from slidingpolicy.policies import by_name
from slidingpolicy.predictors import default_predictor
from slidingpolicy.replay.engines import NATIVE, Arm, Engine

PREFILL_FIRST = "prefill_first"
"""The arm of transformers' prefill-first scheduler."""

PYTHON_VARIABLE = "SLIDINGPOLICY_TRANSFORMERS_PYTHON"
"""The environment variable naming the Python of the transformers environment."""

NUM_BLOCKS = 2048
"""KV cache blocks per server (256 tokens each by transformers' default): far more than the
CPU workload holds at once, allocated in a second, and touched only as it is used."""

THREADS = "1"
"""torch's threads per server unless OMP_NUM_THREADS is set. With two threads on two cores, a
step waits for both, and whatever else runs (the client, another job) stalls it: measured
here, requests sent one at a time decoded at 10-360 ms a token with two threads, against
16-20 ms with one."""

NATIVE_BATCH_TOKENS = 512
"""Tokens a step of transformers' own schedulers holds: the adapter engine's default."""


def batch_tokens(arm: Arm) -> int:
    """Tokens a step of `arm` holds: the policy's token budget, else `NATIVE_BATCH_TOKENS`."""
    if arm.policy is None:
        return NATIVE_BATCH_TOKENS
    return by_name(arm.policy, default_predictor(), **dict(arm.options)).token_budget


def serve_command(
    python: StrPath,
    model: StrPath,
    name: str,
    port: int,
    arm: Arm,
    predictor: StrPath | None = None,
    trace: StrPath | None = None,
    extra: Sequence[str] = (),
) -> list[str]:
    """The command that serves `model` as `name` on 127.0.0.1:`port` under `arm`; `extra`
    comes last, so that it overrides (e.g. ``--num-blocks=4096``)."""
    command = [str(python), "-m", "slidingpolicy_transformers", "serve", str(model)]
    command += ["--arm", arm.label, "--served-model-name", name, "--host", "127.0.0.1"]
    command += ["--port", str(port), "--num-blocks", str(NUM_BLOCKS)]
    command += ["--max-batch-tokens", str(batch_tokens(arm))]
    config: dict[str, Any] = {}
    if arm.policy is not None and predictor is not None:
        config["predictor"] = str(predictor)
    if arm.policy is not None and trace is not None:
        config["trace"] = str(trace)
    if arm.policy is not None and arm.plugins:
        config["plugins"] = list(arm.plugins)
    if config:
        command += ["--adapter-config", json.dumps(config)]
    return [*command, *extra]


def serve_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The server's environment: this one, offline (the model is a local folder), with torch
    on `THREADS` threads unless OMP_NUM_THREADS is set."""
    env = {**environ, "HF_HUB_OFFLINE": "1"}
    env.setdefault("OMP_NUM_THREADS", THREADS)
    return env


TRANSFORMERS = Engine(
    name="transformers",
    package="slidingpolicy_transformers",
    holds="transformers and slidingpolicy-transformers[serve]",
    natives=(NATIVE, PREFILL_FIRST),
    python_option="--transformers-python",
    python_variable=PYTHON_VARIABLE,
    shape="qwen2-small",
    command=serve_command,
    env=serve_env,
)
"""transformers' continuous batching, its FIFO the `native` arm."""
