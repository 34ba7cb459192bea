"""An engine of one model with random weights: transformers' continuous batching under one
arm, its own FIFO (`fifo`), its prefill-first scheduler (`prefill_first`), or a registered
slidingpolicy policy run by a `Binding`.

A scheduler's behaviour depends on how long a step takes, not on what the model says, so the
model is built from its folder's `config.json` alone, with seeded random weights, and never
downloads anything. Prefix sharing is off (every prompt is prefilled in full, as the offline
engine charges it) and batching is synchronous, so that each step's time is measured.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
import torch
from slidingpolicy import Policy
from slidingpolicy.embedding import AdapterConfig as SharedConfig
from slidingpolicy.embedding import PolicyLoop, slo_on_wire
from transformers import (
    AutoConfig,
    AutoModelForCausalLM,
    ContinuousBatchingConfig,
    GenerationConfig,
)

from slidingpolicy_transformers.binding import AdapterConfig, Binding

NATIVE_ARMS = {"fifo": "fifo", "native": "fifo", "prefill_first": "prefill_first"}
"""The engine's own schedulers, by arm name (``native`` is its default, FIFO)."""

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def adapter_options(text: str) -> dict[str, Any]:
    """The JSON object of a command line's ``--adapter-config`` (the shared `AdapterConfig`'s
    options); SystemExit naming the option when it is not one."""
    try:
        options = json.loads(text)
    except ValueError as error:
        raise SystemExit(f"--adapter-config: {error}") from None
    if not isinstance(options, dict):
        raise SystemExit("--adapter-config: must be a JSON object")
    return options


@attrs.frozen(slots=True)
class EngineSettings:
    """How the engine runs: the model folder, the arm, the KV cache and batch sizes.

    - `arm`: ``fifo`` (or ``native``), ``prefill_first``, or a policy label;
    - `adapter`: the adapter's other settings (predictor, SLO defaults, trace) for a policy;
    - `num_blocks`, `block_size`: the paged KV cache (None: transformers sizes it from free
      memory, which on a CPU takes a minute);
    - `max_batch_tokens`: tokens a step holds (None: the policy's token budget, else 512);
    - `device`, `dtype`, `seed`: where and how the random weights live.
    """

    model: Path
    arm: str = "native"
    adapter: dict[str, Any] = attrs.field(factory=dict)
    num_blocks: int | None = 1024
    block_size: int | None = None
    max_batch_tokens: int | None = None
    max_requests_per_batch: int | None = None
    device: str = "cpu"
    dtype: str = "float32"
    seed: int = 0
    attention: str = "sdpa"

    @property
    def native(self) -> str | None:
        """The engine's own scheduler type, or None for a policy arm."""
        return NATIVE_ARMS.get(self.arm)


def build_model(settings: EngineSettings) -> Any:
    """The model of the folder's `config.json` with weights drawn from `settings.seed`,
    created on its device in its dtype: a 7B model's 15 GB go straight to the GPU, never
    through host memory."""
    config = AutoConfig.from_pretrained(settings.model)
    torch.manual_seed(settings.seed)
    with torch.device(settings.device):
        model = AutoModelForCausalLM.from_config(  # type: ignore[no-untyped-call]
            config, dtype=DTYPES[settings.dtype], attn_implementation=settings.attention
        )
    return model.eval()


class Engine:
    """The model and its running `ContinuousBatchingManager` (`manager`); `binding` is the
    policy's for a policy arm (`policy`, when given, plans in place of the arm's), None for
    the engine's own schedulers."""

    def __init__(self, settings: EngineSettings, policy: Policy[Any] | None = None) -> None:
        self.settings = settings
        self.model = build_model(settings)
        self.vocab_size = int(self.model.config.vocab_size)
        self.binding: Binding | None = None
        options: dict[str, Any] = {"allow_block_sharing": False}
        for key in ("num_blocks", "block_size", "max_batch_tokens", "max_requests_per_batch"):
            value = getattr(settings, key)
            if value is not None:
                options[key] = value
        if settings.native is None:
            config_of: SharedConfig = AdapterConfig.from_mapping(
                {**settings.adapter, "policy": settings.arm}
            )
            self.binding = Binding(config_of, policy)
            engine_config = self.binding.engine_config(**options)
        else:
            options.setdefault("max_batch_tokens", 512)
            engine_config = ContinuousBatchingConfig(
                scheduler_type=settings.native, use_async_batching=False, **options
            )
        generation = GenerationConfig(  # type: ignore[no-untyped-call]
            do_sample=False, eos_token_id=-1, max_new_tokens=16
        )
        self.manager: Any = self.model.init_continuous_batching(
            generation_config=generation, continuous_batching_config=engine_config
        )

    def start(self) -> None:
        """Start the engine's generation thread."""
        self.manager.start()

    def running(self) -> bool:
        """True while the generation thread runs."""
        return bool(self.manager.is_running())

    def add(self, request_id: str, prompt: list[int], max_tokens: int, slo: object) -> None:
        """Add a request with its SLO keys as they came (``vllm_xargs``): they go to the
        policy, and are ignored by the engine's own schedulers; an invalid one raises
        `InvalidRecordError` naming its key whatever the arm."""
        if self.binding is not None:
            self.binding.add_request(
                self.manager, prompt, request_id, max_new_tokens=max_tokens, streaming=True,
                slo=slo,
            )  # fmt: skip
            return
        slo_on_wire(slo)
        added = self.manager.add_request(
            prompt, request_id=request_id, max_new_tokens=max_tokens, streaming=True
        )
        if added is None:
            raise RuntimeError(f"the engine refused request {request_id!r} (it is stopping)")

    @property
    def loop(self) -> PolicyLoop[Any] | None:
        """The policy's loop in the engine's scheduler (its `report` is what a router reads,
        on its `clock`): None for the engine's own schedulers, and before the engine built
        its scheduler."""
        scheduler = self.binding.scheduler if self.binding is not None else None
        return scheduler.sliding if scheduler is not None else None

    def cancel(self, request_id: str) -> None:
        """Cancel a request (its client left)."""
        self.manager.cancel_request(request_id)

    def stop(self) -> None:
        """Stop the generation thread, failing what is left, and close the policy's trace."""
        if self.manager.is_running():
            self.manager.stop(block=True, timeout=30, hard_stop=True)
        if self.binding is not None and self.binding.scheduler is not None:
            self.binding.scheduler.close()
