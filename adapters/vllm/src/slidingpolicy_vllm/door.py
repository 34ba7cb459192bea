"""The door: a request whose SLO metadata is malformed or out of range is refused by vLLM's
front end (HTTP 400) before it reaches the scheduler.

vLLM checks each request's sampling parameters when it admits it, and calls there the
`validate_params` class method of every custom logits processor (`--logits-processors`,
`ModelConfig.logits_processors`); a `ValueError` raised there fails the request with a
validation error, which the OpenAI-compatible server answers with 400 and its message.
`SloDoor` is such a processor: its check is the one reader of SLOs on the wire,
`slidingpolicy.embedding.slo_on_wire`, on `SamplingParams.extra_args` (the OpenAI API's
`vllm_xargs`), and it leaves the logits alone.
vLLM's V1 and V2 model runners each load only a subclass of their own `LogitsProcessor`
(the V2 runner, the default on GPUs with Triton, has its own interface), so `SloDoor` is
both, and either runner takes it.

The scheduler does not start without it (`require_door`); `python -m slidingpolicy_vllm
serve` adds it when `--scheduler-cls` names one of the adapter's schedulers (`with_door`),
with the HTTP door (`http_door`), which refuses a streamed request before its stream begins.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any

import torch
from slidingpolicy import InvalidRecordError
from slidingpolicy.embedding import slo_on_wire
from vllm.config import VllmConfig
from vllm.sampling_params import SamplingParams
from vllm.v1.sample.logits_processor import BatchUpdate
from vllm.v1.sample.logits_processor import LogitsProcessor as V1Processor
from vllm.v1.worker.gpu.sample.logits_processor import LogitsContext
from vllm.v1.worker.gpu.sample.logits_processor import LogitsProcessor as V2Processor

DOOR = "slidingpolicy_vllm.door:SloDoor"
"""The door's name for `--logits-processors` (vLLM's `module:class` form)."""

FLAG = "--logits-processors"
MIDDLEWARE = "slidingpolicy_vllm.http_door.SloMiddleware"
"""The HTTP door's import path for vLLM's `--middleware` (`http_door`)."""
SCHEDULERS = "slidingpolicy_vllm."
"""The prefix of the adapter's `--scheduler-cls` values."""


class SloDoor(V1Processor, V2Processor):
    """A logits processor that changes no logits: vLLM calls its `validate_params` for every
    request it admits, and the request is refused there when its SLO metadata is invalid."""

    def __init__(self, vllm_config: VllmConfig, *runner_state: Any) -> None:
        """Nothing to keep: V1 passes the device and pinning, V2 the request state."""

    @classmethod
    def validate_params(cls, sampling_params: SamplingParams) -> None:
        """Raise `InvalidRecordError` (a `ValueError`: vLLM's front end answers 400 with its
        message) when `extra_args` holds an SLO value a request cannot have."""
        slo_on_wire(sampling_params.extra_args)

    def apply(self, logits: torch.Tensor, ctx: LogitsContext | None = None) -> torch.Tensor:
        """The logits, unchanged (both runners' `apply`)."""
        return logits

    def is_argmax_invariant(self) -> bool:
        """True: greedy sampling may skip it (V1)."""
        return True

    def update_state(self, batch_update: BatchUpdate | None) -> None:
        """Nothing to track (V1)."""

    def add_request(self, req_idx: int, sampling_params: SamplingParams) -> bool:
        """False: it changes no request's logits (V2)."""
        return False


def _is_door(entry: object) -> bool:
    """Whether a `logits_processors` entry (a class or a `module:class` name) is the door,
    or a subclass of it."""
    if isinstance(entry, str):
        module, _, qualname = entry.partition(":")
        try:
            found: Any = importlib.import_module(module)
            for attribute in qualname.split("."):
                found = getattr(found, attribute)
        except (ImportError, AttributeError, ValueError):
            return False
        entry = found
    return isinstance(entry, type) and issubclass(entry, SloDoor)


def require_door(config: VllmConfig) -> None:
    """Refuse to start a scheduler whose front end does not check SLO metadata."""
    entries = config.model_config.logits_processors or ()
    if not any(_is_door(entry) for entry in entries):
        raise InvalidRecordError(
            "vllm config",
            "logits_processors",
            f"={list(entries)!r} lacks {DOOR}, the door that refuses a request with "
            "malformed SLO metadata (HTTP 400) before it reaches the scheduler: serve with "
            f"`python -m slidingpolicy_vllm serve` (it adds it), or pass `{FLAG} {DOOR}` "
            f"(`LLM(..., logits_processors=[{DOOR!r}])`)",
        )


def with_door(argv: Sequence[str]) -> list[str]:
    """`argv` of `vllm serve`, with the door when `--scheduler-cls` names one of the adapter's
    schedulers and no door is among `--logits-processors` yet: `SloDoor` among them, and the
    HTTP door (`http_door.SloMiddleware`, which answers a streamed request 400 too) as a
    `--middleware`. A door named already (a subclass of `SloDoor`) is left as it is, alone."""
    args = list(argv)
    if not args or args[0] != "serve" or not _names_adapter(args):
        return args
    for i, arg in enumerate(args):
        flag, equals, value = arg.partition("=")
        if flag.replace("_", "-") != FLAG:
            continue
        given = [value] if equals else _values(args[i + 1 :])
        if any(_is_door(entry) for entry in given):
            return args
        args[i : i + 1] = [FLAG, DOOR, *([value] if equals else [])]
        return [*args, "--middleware", MIDDLEWARE]
    return [*args, FLAG, DOOR, "--middleware", MIDDLEWARE]


def _names_adapter(args: Sequence[str]) -> bool:
    """Whether `--scheduler-cls` names one of the adapter's schedulers."""
    for i, arg in enumerate(args):
        flag, equals, value = arg.partition("=")
        if flag.replace("_", "-") == "--scheduler-cls":
            named = value if equals else (args[i + 1] if i + 1 < len(args) else "")
            return named.startswith(SCHEDULERS)
    return False


def _values(args: Sequence[str]) -> list[str]:
    """The values that follow a flag taking one or more (up to the next flag)."""
    values = []
    for arg in args:
        if arg.startswith("-"):
            break
        values.append(arg)
    return values
