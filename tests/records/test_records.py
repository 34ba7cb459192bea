"""Bad input: every invalid field of every record raises a SlidingPolicyError naming both."""

from __future__ import annotations

import math
from typing import Any

import attrs
import pytest

from slidingpolicy import (
    Allocation,
    BatchPlan,
    InvalidRecordError,
    LatencyPredictor,
    LinearModel,
    Phase,
    Request,
    SchedulerState,
    SlidingConfig,
    SlidingPolicyError,
    default_predictor,
)
from slidingpolicy.policies import Online, OnlineConfig, by_name, names
from slidingpolicy.policies.variants import FIXED

GOOD: dict[str, Any] = {
    "id": "r7",
    "arrival": 1.0,
    "prompt_tokens": 512,
    "prefilled": 0,
    "generated": 0,
    "ttft_slo": 3.0,
    "tbt_slo": 0.1,
}


def request(**changes: Any) -> Request:
    return Request(**{**GOOD, **changes})


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("id", "", "request: id must be a non-empty str"),
        ("id", 7, "request: id must be a non-empty str"),
        ("arrival", math.nan, "request 'r7': arrival=nan must be finite"),
        ("arrival", -1.0, "request 'r7': arrival=-1.0 must be >= 0"),
        ("arrival", math.inf, "request 'r7': arrival=inf must be finite"),
        ("prompt_tokens", 0, "request 'r7': prompt_tokens=0 must be >= 1"),
        ("prompt_tokens", 2.5, "request 'r7': prompt_tokens must be an int"),
        ("prompt_tokens", True, "request 'r7': prompt_tokens must be an int"),
        ("prefilled", -1, "request 'r7': prefilled=-1 must be >= 0"),
        ("prefilled", 900, "request 'r7': prefilled=900 exceeds prompt_tokens=512"),
        ("generated", -2, "request 'r7': generated=-2 must be >= 0"),
        ("ttft_slo", 0.0, "request 'r7': ttft_slo=0.0 must be > 0"),
        ("ttft_slo", math.nan, "request 'r7': ttft_slo=nan must be finite"),
        ("tbt_slo", -0.1, "request 'r7': tbt_slo=-0.1 must be > 0"),
        ("tbt_slo", "fast", "request 'r7': tbt_slo must be a number"),
        ("protected", 1, "request 'r7': protected must be a bool"),
        ("max_new_tokens", 0, "request 'r7': max_new_tokens=0 must be >= 1"),
    ],
)
def test_request_rejects_each_bad_field(field: str, value: object, message: str) -> None:
    with pytest.raises(InvalidRecordError) as caught:
        request(**{field: value})
    assert str(caught.value).startswith(message)
    assert caught.value.field == field


def test_request_decoding_needs_a_generated_token() -> None:
    with pytest.raises(SlidingPolicyError, match="request 'r7': generated=0 but the prefill"):
        request(prefilled=512)


def test_request_finished_is_not_live() -> None:
    with pytest.raises(SlidingPolicyError, match="generated=5 reaches max_new_tokens=5"):
        request(prefilled=512, generated=5, max_new_tokens=5)


def test_next_token_refuses_what_one_token_cannot_be() -> None:
    with pytest.raises(SlidingPolicyError, match="request 'r7': generated cannot advance"):
        request(prefilled=100).next_token()
    with pytest.raises(SlidingPolicyError, match="generated=5 reaches max_new_tokens=5"):
        request(prefilled=512, generated=4, max_new_tokens=5).next_token()


def test_the_default_predictor_is_the_packaged_file() -> None:
    from slidingpolicy.predictors.locations import PACKAGED

    assert default_predictor() == LatencyPredictor.load(PACKAGED / "rtx3090-qwen2.5-7b-tp2.json")


def test_request_derived_values_follow_eq_1_and_10() -> None:
    waiting = request()
    prefilling = request(prefilled=100)
    decoding = request(prefilled=512, generated=4)
    assert [waiting.phase, prefilling.phase, decoding.phase] == [
        Phase.WAITING,
        Phase.PREFILLING,
        Phase.DECODING,
    ]
    assert prefilling.remaining_prefill == 412
    assert decoding.context_tokens == 516
    assert decoding.deadline == pytest.approx(1.0 + 3.0 + 4 * 0.1)
    assert decoding.slack(2.0) == pytest.approx(2.4)
    assert attrs.evolve(decoding, generated=5).deadline == pytest.approx(4.5)


def test_errors_are_value_errors() -> None:
    assert issubclass(SlidingPolicyError, ValueError)


def state(**changes: Any) -> SchedulerState:
    fields: dict[str, Any] = {
        "now": 5.0,
        "requests": (request(), request(id="r8")),
        "prefill_throughput": 8000.0,
        "kv_free_tokens": None,
    }
    return SchedulerState(**{**fields, **changes})


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("now", math.nan, "scheduler state: now=nan must be finite"),
        ("prefill_throughput", 0.0, "scheduler state: prefill_throughput=0.0 must be > 0"),
        ("prefill_throughput", math.inf, "scheduler state: prefill_throughput=inf must be finite"),
        ("kv_free_tokens", -16, "scheduler state: kv_free_tokens=-16 must be >= 0"),
        ("requests", (request(), request()), "scheduler state: requests holds id 'r7' twice"),
        ("requests", ("r7",), "scheduler state: requests holds a non-Request 'r7'"),
        ("now", 0.5, "request 'r7': arrival=1.0 is after the state's now=0.5"),
    ],
)
def test_state_rejects_each_bad_field(field: str, value: object, message: str) -> None:
    with pytest.raises(InvalidRecordError) as caught:
        state(**{field: value})
    assert str(caught.value).startswith(message)


def test_state_splits_decoding_and_candidates_in_order() -> None:
    decoding = request(id="d", prefilled=512, generated=1)
    snapshot = state(requests=[request(id="a"), decoding, request(id="b")])
    assert snapshot.requests == (request(id="a"), decoding, request(id="b"))
    assert snapshot.decoding == (decoding,)
    assert [r.id for r in snapshot.prefill_candidates] == ["a", "b"]


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: Allocation("", 1), "allocation: request_id must be a non-empty str"),
        (lambda: Allocation("r1", 0), "allocation 'r1': tokens=0 must be >= 1"),
        (lambda: Allocation("r1", 1.0), "allocation 'r1': tokens must be an int"),  # type: ignore[arg-type]
        (
            lambda: BatchPlan((), "chunker", "slidingserve", -1, 0.0),
            "batch plan: prefill_budget=-1 must be >= 0",
        ),
        (
            lambda: BatchPlan((), "chunker", "slidingserve", 0, math.nan),
            "batch plan: predicted_latency=nan must be finite",
        ),
        (lambda: LinearModel(-1.0, (0.0,) * 7), "linear model: intercept=-1.0 must be >= 0"),
        (lambda: LinearModel(0.0, (0.0,) * 6), "linear model: weights has 6 entries, needs 7"),
        (
            lambda: LinearModel(0.0, (0.0,) * 6 + (-1e-9,)),
            "linear model: weights[6]=-1e-09 must be >= 0",
        ),
    ],
)
def test_plan_and_model_records_reject_bad_fields(build: Any, message: str) -> None:
    with pytest.raises(InvalidRecordError) as caught:
        build()
    assert str(caught.value).startswith(message)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("max_batch_tokens", 0, "sliding config: max_batch_tokens=0 must be >= 1"),
        ("urgency_threshold", 0.0, "sliding config: urgency_threshold=0.0 must be > 0"),
        ("epsilon", math.nan, "sliding config: epsilon=nan must be finite"),
        ("window", 0, "sliding config: window=0 must be >= 1"),
        ("split_search", "binary", "sliding config: split_search='binary' is not one of"),
        ("order", "fcfs", "sliding config: order='fcfs' is not one of"),
        ("constructor", "yes", "sliding config: constructor must be a bool"),
        ("demote_late", None, "sliding config: demote_late must be a bool"),
        ("latency_margin", 0.9, "sliding config: latency_margin=0.9 must be >= 1"),
        ("level_order", "arrival", "sliding config: level_order='arrival' is not one of"),
        ("urgent_first", 1, "sliding config: urgent_first must be a bool"),
    ],
)
def test_config_rejects_each_bad_field(field: str, value: object, message: str) -> None:
    changes: dict[str, Any] = {field: value}
    with pytest.raises(InvalidRecordError) as caught:
        SlidingConfig(**changes)
    assert str(caught.value).startswith(message)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("refit_every", 0, "online config: refit_every=0 must be >= 1 (learn=false turns"),
        ("forgetting", 1.5, "online config: forgetting=1.5 must be <= 1"),
        ("forgetting", 0.0, "online config: forgetting=0.0 must be > 0"),
        ("prior_weight", -1.0, "online config: prior_weight=-1.0 must be >= 0"),
        ("warmup", -1, "online config: warmup=-1 must be >= 0"),
        ("cold_margin", 0.9, "online config: cold_margin=0.9 must be >= 1"),
        ("margin_window", 0, "online config: margin_window=0 must be >= 1"),
        ("margin_quantile", 0.0, "online config: margin_quantile=0.0 must be in (0, 1)"),
        ("margin_quantile", 1.0, "online config: margin_quantile=1.0 must be in (0, 1)"),
        ("margin_floor", 0.0, "online config: margin_floor=0.0 must be > 0"),
    ],
)
def test_online_config_rejects_each_bad_field(field: str, value: object, message: str) -> None:
    changes: dict[str, Any] = {field: value}
    with pytest.raises(InvalidRecordError) as caught:
        OnlineConfig(**changes)
    assert str(caught.value).startswith(message)


def test_learning_options_with_learning_turned_off_are_refused() -> None:
    with pytest.raises(InvalidRecordError, match="forgetting tunes online learning, which learn"):
        by_name("slidingserve", default_predictor(), learn=False, forgetting=0.9)


def test_learn_must_be_a_bool() -> None:
    with pytest.raises(InvalidRecordError, match="learn='yes' must be true or false"):
        by_name("slidingserve", default_predictor(), learn="yes")


def test_slidingserve_learns_by_default_and_the_baselines_do_not() -> None:
    for name in names():
        learning = isinstance(by_name(name, default_predictor()), Online)
        assert learning == (name in FIXED), name
        assert not isinstance(by_name(name, default_predictor(), learn=False), Online)
        assert isinstance(by_name(name, default_predictor(), learn=True), Online)
        assert isinstance(by_name(name, default_predictor(), refit_every=8), Online)


@pytest.mark.parametrize(
    ("record", "documented"),
    [
        (Request, ("deadline", "remaining_prefill", "is_decoding", "context_tokens")),
        (SchedulerState, ("decoding", "prefill_candidates", "requests", "request(id)")),
    ],
)
def test_what_a_policy_reads_off_a_record_is_in_its_docstring(
    record: type, documented: tuple[str, ...]
) -> None:
    """`help(Request)` says what each derived field means (a slot's own docstring shows
    nowhere at run time)."""
    doc = record.__doc__ or ""
    assert [name for name in documented if f"- `{name}`: " not in doc] == []


def test_a_plans_latency_and_prefill_budget_and_the_predictors_arguments_are_documented() -> None:
    doc = BatchPlan.__doc__ or ""
    assert "`prefill_budget` is" in doc
    assert "`predicted_latency` is" in doc
    assert "`Request.context_tokens`" in (LatencyPredictor.predict.__doc__ or "")
