"""The arms of a vLLM server: vLLM's own scheduler, or a registered policy run by the adapter.

An arm is started as ``<python> -m slidingpolicy_vllm serve MODEL ...`` from the environment
that holds vLLM and the adapter (`slidingpolicy-vllm`): dummy weights, no tokenizer, eager
mode, on 127.0.0.1, without prefix caching (the offline engine prefills every prompt in full),
and, for a policy arm, ``--scheduler-cls slidingpolicy_vllm.SlidingScheduler`` with the policy
in ``--additional-config`` (the adapter's `AdapterConfig`: policy, options, predictor, trace).
Every arm gets the same other arguments, so that only the scheduler differs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from slidingpolicy._paths import StrPath
from slidingpolicy.replay.engines import NATIVE, Arm, Engine

PYTHON_VARIABLE = "SLIDINGPOLICY_VLLM_PYTHON"
"""The environment variable naming the Python of the vLLM environment."""

SCHEDULER = "slidingpolicy_vllm.SlidingScheduler"

KV_CACHE_GIB = "1"
"""vLLM's CPU KV cache (GiB) unless VLLM_CPU_KVCACHE_SPACE is set: enough for a few hundred
requests of the CPU workload, and small, since every arm's server is held at once."""

SERVE_ARGS = (
    "--load-format",
    "dummy",
    "--skip-tokenizer-init",
    "--enforce-eager",
    "--no-enable-prefix-caching",
    "--disable-uvicorn-access-log",
    "--seed",
    "0",
)


def adapter_config(arm: Arm, predictor: StrPath | None, trace: StrPath | None) -> dict[str, Any]:
    """The adapter's ``--additional-config`` section for a policy arm."""
    config: dict[str, Any] = {"policy": arm.policy, "options": dict(arm.options)}
    if predictor is not None:
        config["predictor"] = str(predictor)
    if trace is not None:
        config["trace"] = str(trace)
    if arm.plugins:
        config["plugins"] = list(arm.plugins)
    return {"slidingpolicy": config}


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
    """The command that serves `model` as `name` on 127.0.0.1:`port` under `arm`."""
    command = [str(python), "-m", "slidingpolicy_vllm", "serve", str(model), *SERVE_ARGS]
    command += ["--served-model-name", name, "--host", "127.0.0.1", "--port", str(port)]
    if arm.policy is not None:
        config = adapter_config(arm, predictor, trace)
        command += ["--scheduler-cls", SCHEDULER, "--additional-config", json.dumps(config)]
    return [*command, *extra]


def serve_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The server's environment: this one, offline (the model is a local folder), with a small
    CPU KV cache unless one is set."""
    env = dict(environ)
    env["HF_HUB_OFFLINE"] = "1"
    env.setdefault("VLLM_CPU_KVCACHE_SPACE", KV_CACHE_GIB)
    return env


VLLM = Engine(
    name="vllm",
    package="slidingpolicy_vllm",
    holds="vLLM and slidingpolicy-vllm",
    natives=(NATIVE,),
    python_option="--vllm-python",
    python_variable=PYTHON_VARIABLE,
    shape="opt-small",
    command=serve_command,
    env=serve_env,
)
"""vLLM, its own scheduler the `native` arm."""
