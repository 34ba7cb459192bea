"""The binding's settings and SLOs: every bad value refused with its key named, nothing lost."""

from __future__ import annotations

from typing import Any, cast

import pytest
from hypothesis import given
from hypothesis import strategies as st
from slidingpolicy import InvalidRecordError, Slo
from transformers.generation.continuous_batching.scheduler import SCHEDULER_MAPPING

from slidingpolicy_transformers import AdapterConfig, Binding, SlidingScheduler


def test_a_policy_that_gives_up_binds() -> None:
    """It failed before: give_up_after was refused here, and worked only in vLLM."""
    binding = Binding({"policy": "slidingserve+[give_up_after=5]"})
    assert binding.config.options["give_up_after"] == 5


def test_a_label_carries_the_options() -> None:
    binding = Binding({"policy": "sarathi-edf[token_budget=256]"})
    assert binding.token_budget == 256
    assert binding.config.policy == "sarathi-edf"


def test_each_binding_registers_its_own_scheduler_type() -> None:
    one, two = Binding({"policy": "sarathi"}), Binding({"policy": "slidingserve+"})
    assert one.scheduler_type != two.scheduler_type
    assert issubclass(SCHEDULER_MAPPING[one.scheduler_type], SlidingScheduler)
    assert issubclass(SCHEDULER_MAPPING[two.scheduler_type], SlidingScheduler)
    bound = cast("type[SlidingScheduler]", SCHEDULER_MAPPING[two.scheduler_type])
    assert bound.binding is two


def test_the_engine_config_runs_the_binding_synchronously() -> None:
    binding = Binding({"policy": "sarathi[token_budget=256]"})
    config = binding.engine_config(num_blocks=64)
    assert config.scheduler_type == binding.scheduler_type
    assert config.use_async_batching is False
    assert config.max_batch_tokens == 256


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"max_batch_tokens": 128}, "max_batch_tokens"),
        ({"scheduler_type": "fifo"}, "scheduler_type"),
        ({"use_async_batching": True}, "use_async_batching"),
    ],
)
def test_an_engine_config_that_would_not_hold_the_policy_is_refused(
    options: dict[str, Any], field: str
) -> None:
    binding = Binding({"policy": "sarathi[token_budget=256]"})
    with pytest.raises(InvalidRecordError) as caught:
        binding.engine_config(**options)
    assert caught.value.field == field


class _Manager:
    """Stands for a `ContinuousBatchingManager`: records what it was given."""

    output_router = None

    def __init__(self) -> None:
        self.added: list[tuple[list[int], dict[str, Any]]] = []

    def add_request(self, input_ids: list[int], **kwargs: Any) -> str:
        self.added.append((input_ids, kwargs))
        return str(kwargs["request_id"])


BAD = st.one_of(
    st.floats(max_value=0.0),
    st.floats(min_value=1e10, exclude_min=True),
    st.just(float("nan")),
    st.text(max_size=3),
    st.lists(st.integers(), max_size=2),
    st.booleans(),
)


@given(key=st.sampled_from(["ttft_slo", "tbt_slo"]), value=BAD)
def test_a_bad_slo_is_refused_with_its_key_and_the_request_is_not_added(
    key: str, value: object
) -> None:
    binding, manager = Binding({"policy": "sarathi"}), _Manager()
    slo: dict[str, object] = {"ttft_slo": None, "tbt_slo": None, key: value}
    with pytest.raises(InvalidRecordError) as caught:
        binding.add_request(manager, [1, 2, 3], ttft_slo=slo["ttft_slo"], tbt_slo=slo["tbt_slo"])
    assert caught.value.field == key
    assert "accepted" in str(caught.value)
    assert manager.added == []
    assert len(binding.slos) == 0


@given(value=st.one_of(st.integers().filter(lambda v: v not in (0, 1)), st.text(max_size=3),
                       st.floats()))  # fmt: skip
def test_protected_must_be_a_bool_or_one_or_zero(value: object) -> None:
    binding = Binding({"policy": "sarathi"})
    with pytest.raises(InvalidRecordError, match="protected"):
        binding.add_request(_Manager(), [1, 2, 3], protected=value)


@given(
    ttft=st.none() | st.floats(min_value=1e-3, max_value=1e3),
    tbt=st.none() | st.floats(min_value=1e-3, max_value=10.0),
    protected=st.none() | st.booleans(),
)
def test_the_slos_given_are_kept_and_the_defaults_fill_the_rest(
    ttft: float | None, tbt: float | None, protected: bool | None
) -> None:
    binding = Binding(AdapterConfig(policy="sarathi", ttft_slo=2.0, tbt_slo=0.2))
    manager = _Manager()
    rid = binding.add_request(
        manager, [5, 6], ttft_slo=ttft, tbt_slo=tbt, protected=protected, max_new_tokens=3
    )
    expected = Slo(2.0 if ttft is None else ttft, 0.2 if tbt is None else tbt, bool(protected))
    assert binding.slos.get(rid) == expected
    assert manager.added == [([5, 6], {"request_id": rid, "max_new_tokens": 3})]
    binding.slos.forget(rid)
    assert binding.slos.get(rid) == binding.slos.default
