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
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from slidingpolicy.errors import EngineError, PolicyLabelError, UnknownNameError
from slidingpolicy.policies import by_name, names
from slidingpolicy.policies.labels import Options, label, parse_label, split_labels
from slidingpolicy.predictors import default_predictor

NATIVE = "native"
"""The arm of vLLM's own scheduler (no `--scheduler-cls`)."""

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


@attrs.frozen(slots=True)
class Arm:
    """vLLM's own scheduler (`policy` None), or the registered `policy` with its options."""

    policy: str | None = None
    options: Options = ()

    @property
    def label(self) -> str:
        """How results name the arm: ``native``, or the policy's label."""
        return NATIVE if self.policy is None else label(self.policy, self.options)


def parse_arms(text: str) -> tuple[Arm, ...]:
    """The arms of a comma-separated list of ``native`` and policy labels, each policy built
    once with its options to check them."""
    arms = []
    for part in split_labels(text):
        name, options = parse_label(part)
        if name == NATIVE and not options:
            arms.append(Arm())
            continue
        if name not in names():
            raise UnknownNameError("arm", name, (NATIVE, *names()))
        by_name(name, default_predictor(), **dict(options))
        arms.append(Arm(name, options))
    if not arms:
        raise PolicyLabelError(f"--policies {text!r}: name at least one arm ({NATIVE} or a policy)")
    if len({a.label for a in arms}) < len(arms):
        raise PolicyLabelError(f"--policies {text!r}: an arm is named twice")
    return tuple(arms)


def adapter_config(arm: Arm, predictor: Path | None, trace: Path | None) -> dict[str, Any]:
    """The adapter's ``--additional-config`` section for a policy arm."""
    config: dict[str, Any] = {"policy": arm.policy, "options": dict(arm.options)}
    if predictor is not None:
        config["predictor"] = str(predictor)
    if trace is not None:
        config["trace"] = str(trace)
    return {"slidingpolicy": config}


def serve_command(
    python: Path,
    model: Path,
    name: str,
    port: int,
    arm: Arm,
    predictor: Path | None = None,
    trace: Path | None = None,
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


def vllm_python(given: Path | None) -> Path:
    """The Python of the vLLM environment: `given` (--vllm-python, or the environment
    variable), checked to be an executable file."""
    if given is None:
        raise EngineError(
            "--launch vllm needs the Python of an environment with vLLM and slidingpolicy-vllm "
            f"installed: pass --vllm-python PATH or set {PYTHON_VARIABLE}"
        )
    if not (given.is_file() and os.access(given, os.X_OK)):
        raise EngineError(f"--vllm-python {given}: not an executable file")
    return given
