"""The door: vLLM's front end refuses a request whose SLO metadata is malformed or out of
range, through `SloDoor.validate_params`, under either model runner; the scheduler does not
start without the door; `python -m slidingpolicy_vllm serve` adds it."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from slidingpolicy import InvalidRecordError, Slo
from slidingpolicy.embedding import slo_on_wire
from slidingpolicy.records.slo import RANGES
from vllm.exceptions import VLLMValidationError
from vllm.sampling_params import SamplingParams
from vllm.v1.sample.logits_processor import validate_logits_processors_parameters
from vllm.v1.worker.gpu.sample.logits_processor import (
    build_custom_logits_processors_params_validator,
)

from slidingpolicy_vllm import AsyncSlidingScheduler, SlidingScheduler
from slidingpolicy_vllm.door import DOOR, MIDDLEWARE, SloDoor, with_door
from slidingpolicy_vllm.testing import make_scheduler

HOSTILE = [
    ("ttft_slo", -1, "ttft_slo=-1.0 must be > 0"),
    ("ttft_slo", 0, "ttft_slo=0.0 must be > 0"),
    ("ttft_slo", "abc", "ttft_slo must be a number, got 'abc'"),
    ("ttft_slo", [1, 2], "ttft_slo must be a number, got [1, 2]"),
    ("ttft_slo", True, "ttft_slo must be a number, got True"),
    ("ttft_slo", math.nan, "ttft_slo=nan must be finite"),
    ("ttft_slo", math.inf, "ttft_slo=inf must be finite"),
    ("ttft_slo", 1e308, "ttft_slo=1e+308 s is beyond 1e+10 s"),
    ("tbt_slo", 1e-9, "tbt_slo=1e-09 s is shorter than any step"),
    ("protected", "yes", "protected must be a bool, got 'yes'"),
    ("protected", 2, "protected must be a bool, got 2"),
    ("protected", 1.0, "protected must be a bool, got 1.0"),
]
"""Each hostile value and what the refusal says of it."""

HTTP = ["--middleware", MIDDLEWARE]
V1 = "V1"
V2 = "V2"


def _validate(runner: str, params: SamplingParams) -> None:
    """vLLM's per-request check of the custom logits processors, as its front end runs it
    for the V1 or the V2 model runner (each loads only a subclass of its own interface)."""
    if runner == V1:
        validate_logits_processors_parameters([DOOR], params)
    else:
        build_custom_logits_processors_params_validator([DOOR])(params)


@pytest.mark.parametrize("runner", [V1, V2])
@pytest.mark.parametrize(("key", "value", "said"), HOSTILE)
def test_a_hostile_slo_is_refused_at_the_door_naming_key_value_and_range(
    runner: str, key: str, value: object, said: str
) -> None:
    params = SamplingParams(max_tokens=4, extra_args={"ttft_slo": 2.0, key: value})
    with pytest.raises(VLLMValidationError) as refused:
        _validate(runner, params)
    message = str(refused.value)
    assert message.startswith(f"vllm_xargs: {said}")
    assert message.endswith(f"(accepted: {RANGES[key]})")


@pytest.mark.parametrize("runner", [V1, V2])
@pytest.mark.parametrize(
    "extra",
    [
        None,
        {},
        {"ttft_slo": 0.5, "tbt_slo": 0.05, "protected": True},
        {"ttft_slo": 1e10, "tbt_slo": 1e-3},
        {"other_plugin": [1, "x"], "priority": "high"},
    ],
)
def test_valid_slos_and_other_keys_pass(runner: str, extra: dict[str, object] | None) -> None:
    _validate(runner, SamplingParams(max_tokens=4, extra_args=extra))


@pytest.mark.parametrize(("sent", "read"), [(1, True), (0, False), (True, True), (False, False)])
def test_protected_arrives_as_one_or_zero_and_is_read_as_the_flag(sent: object, read: bool) -> None:
    """vLLM's OpenAI API passes a JSON true or false in `vllm_xargs` on as 1 or 0."""
    params = SamplingParams(max_tokens=4, extra_args={"protected": sent})
    for runner in (V1, V2):
        _validate(runner, params)
    assert slo_on_wire(params.extra_args, Slo(2.0, 0.1)) == Slo(2.0, 0.1, read)


def test_the_door_changes_no_logits_under_either_runner() -> None:
    logits = torch.arange(6.0).reshape(2, 3)
    door = SloDoor(None)  # type: ignore[arg-type]
    assert door.apply(logits) is logits
    assert door.apply(logits, None) is logits
    assert door.is_argmax_invariant()
    assert not door.add_request(0, SamplingParams(max_tokens=1))


@pytest.mark.parametrize("cls", [SlidingScheduler, AsyncSlidingScheduler])
def test_the_scheduler_does_not_start_without_the_door(
    model_dir: Path, cls: type[SlidingScheduler]
) -> None:
    with pytest.raises(InvalidRecordError) as refused:
        make_scheduler(cls, model_dir, num_blocks=8, logits_processors=())
    message = str(refused.value)
    assert message.startswith("vllm config: logits_processors=[] lacks " + DOOR)
    assert "--logits-processors slidingpolicy_vllm.door:SloDoor" in message
    leaky = "tests.leaky_door:LeakyDoor"
    make_scheduler(cls, model_dir, num_blocks=8, logits_processors=(leaky,))


SERVE = ["serve", "tiny", "--scheduler-cls", "slidingpolicy_vllm.AsyncSlidingScheduler"]


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (SERVE, [*SERVE, "--logits-processors", DOOR, *HTTP]),
        ([*SERVE, "--logits-processors", "a:B", "--port", "1"],
         [*SERVE, "--logits-processors", DOOR, "a:B", "--port", "1", *HTTP]),
        ([*SERVE, "--logits_processors=a:B"],
         [*SERVE, "--logits-processors", DOOR, "a:B", *HTTP]),
        ([*SERVE, "--logits-processors", DOOR], [*SERVE, "--logits-processors", DOOR]),
        ([*SERVE, "--logits-processors", "tests.leaky_door:LeakyDoor"],
         [*SERVE, "--logits-processors", "tests.leaky_door:LeakyDoor"]),
        (["serve", "tiny", "--scheduler-cls=slidingpolicy_vllm.SlidingScheduler"],
         ["serve", "tiny", "--scheduler-cls=slidingpolicy_vllm.SlidingScheduler",
          "--logits-processors", DOOR, *HTTP]),
        (["serve", "tiny"], ["serve", "tiny"]),
        (["serve", "tiny", "--scheduler-cls", "my.Scheduler"],
         ["serve", "tiny", "--scheduler-cls", "my.Scheduler"]),
        (["--version"], ["--version"]),
    ],
)  # fmt: skip
def test_serve_gets_the_door_with_the_adapters_scheduler(
    argv: list[str], expected: list[str]
) -> None:
    assert with_door(argv) == expected
