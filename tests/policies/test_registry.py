"""The registry: every policy by name, with its options checked and applied."""

from __future__ import annotations

import pytest

from slidingpolicy import SlidingPolicyError, UnknownNameError, default_predictor
from slidingpolicy.policies import by_name, names

ALL = (
    "vllm",
    "sarathi",
    "sarathi-edf",
    "qoserve",
    "greedy",
    "sarathi-edf+sc",
    "sarathi-edf+sc+mlps",
    "slidingserve",
    "slidingserve+",
)


def test_names_lists_the_baselines_then_the_slidingserve_variants() -> None:
    assert names() == ALL


@pytest.mark.parametrize("name", ALL)
def test_each_policy_carries_its_registry_name(name: str) -> None:
    assert by_name(name, default_predictor()).name == name


def test_an_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(UnknownNameError) as error:
        by_name("fifo", default_predictor())
    assert "'fifo'" in str(error.value)
    assert all(name in str(error.value) for name in ALL)
    assert error.value.known == tuple(sorted(ALL))


@pytest.mark.parametrize(
    ("name", "options", "named"),
    [
        ("vllm", {"chunk": 5}, "chunk"),
        ("vllm", {"token_budget": 0}, "token_budget"),
        ("sarathi", {"token_budget": 1.5}, "token_budget"),
        ("qoserve", {"kappa": -1.0}, "kappa"),
        ("qoserve", {"menu": (256, 128)}, "menu"),
        ("qoserve", {"decay": 2.0}, "decay"),
        ("greedy", {"window": 2}, "window"),
        ("sarathi-edf+sc", {"order": "mlps"}, "order"),
        ("slidingserve", {"max_batch_tokens": -3}, "max_batch_tokens"),
        ("slidingserve", {"token_budget": 512}, "token_budget"),
    ],
)
def test_a_bad_option_raises_an_error_naming_it(
    name: str, options: dict[str, object], named: str
) -> None:
    with pytest.raises(SlidingPolicyError, match=named):
        by_name(name, default_predictor(), **options)


def test_a_predictor_of_the_wrong_type_is_refused() -> None:
    with pytest.raises(SlidingPolicyError, match="predictor"):
        by_name("vllm", "rtx3090")  # type: ignore[arg-type]


def test_options_reach_the_policy() -> None:
    predictor = default_predictor()
    assert by_name("vllm", predictor, token_budget=1024).token_budget == 1024
    assert by_name("sarathi-edf", predictor, token_budget=2048).token_budget == 2048
    assert by_name("qoserve", predictor, menu=[128, 4096]).token_budget == 4096
    assert by_name("slidingserve", predictor, max_batch_tokens=4096).token_budget == 4096
