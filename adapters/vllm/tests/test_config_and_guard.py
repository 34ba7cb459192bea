"""Bad adapter configuration is refused at start-up with the field named; so is a vLLM whose
hooks differ from the tested ones."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from slidingpolicy import InvalidRecordError, UnknownNameError
from vllm.v1.core.sched.scheduler import Scheduler

from slidingpolicy_vllm import AdapterConfig, SlidingScheduler, UnsupportedVllmError, check_vllm
from slidingpolicy_vllm.testing import make_scheduler


@pytest.mark.parametrize(
    ("section", "field"),
    [
        ({"policy": "slidingserve", "options": {"token_budget": 64}}, "token_budget"),
        ({"policy": "vllm"}, "max_num_batched_tokens"),
    ],
)
def test_bad_config_names_the_field(model_dir: Path, section: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidRecordError) as caught:
        make_scheduler(
            SlidingScheduler, model_dir, num_blocks=8, additional_config={"slidingpolicy": section}
        )
    assert caught.value.field == field


def test_an_unknown_policy_lists_the_known_ones(model_dir: Path) -> None:
    with pytest.raises(UnknownNameError, match="slidingserve"):
        AdapterConfig(policy="fastest").build_policy()


def test_options_pass_through_by_name(model_dir: Path) -> None:
    config = {"slidingpolicy": {"policy": "sarathi", "options": {"token_budget": 256}}}
    scheduler = make_scheduler(SlidingScheduler, model_dir, num_blocks=8, additional_config=config)
    assert isinstance(scheduler, SlidingScheduler)
    assert scheduler.sliding.policy.token_budget == 256


def test_the_tested_vllm_is_accepted() -> None:
    check_vllm()


@pytest.mark.parametrize("version", ["0.32.0", "0.32.0+cpu", "0.33.0", "0.33.1"])
def test_both_tested_series_are_accepted_with_the_known_hooks(version: str) -> None:
    check_vllm(version)


@pytest.mark.parametrize("version", ["0.34.0", "0.31.2", "1.32.0", "1.33.0", "dev"])
def test_another_vllm_series_is_refused(version: str) -> None:
    with pytest.raises(UnsupportedVllmError, match=version):
        check_vllm(version)


class _OtherHook(Scheduler):
    def _reserve_prefill_lookahead(self, request: Any, num_new_tokens: int) -> int:  # type: ignore[override]
        return num_new_tokens


class _HookNotCalled(Scheduler):
    def schedule(self, throttle_prefills: bool = False) -> Any:
        return None


class _AdmitsPastFullSlots(Scheduler):
    def schedule(self, throttle_prefills: bool = False) -> Any:
        """Calls the hook for both queues but never stops admission at full slots."""
        self._reserve_prefill_lookahead(None, 0, 0)  # type: ignore[arg-type]
        self._reserve_prefill_lookahead(None, 0, 0)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("scheduler", "problem"),
    [
        (_OtherHook, "is not"),
        (_HookNotCalled, "calls"),
        (_AdmitsPastFullSlots, "no longer stops admitting"),
    ],
)
def test_a_changed_hook_is_refused(scheduler: type[Scheduler], problem: str) -> None:
    with pytest.raises(UnsupportedVllmError, match=problem):
        check_vllm("0.32.0", scheduler)


def test_the_guard_runs_at_start_up(model_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import slidingpolicy_vllm.scheduler as module

    monkeypatch.setattr(module, "check_vllm", lambda: check_vllm("0.40.0"))
    with pytest.raises(UnsupportedVllmError):
        make_scheduler(SlidingScheduler, model_dir, num_blocks=8)
