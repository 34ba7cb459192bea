"""Library mistakes fail where they are made, as a SlidingPolicyError naming the argument."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from slidingpolicy import (
    Allocation,
    BatchPlan,
    LatencyPredictor,
    PlanBranch,
    Request,
    SchedulerState,
    SlidingConfig,
    SlidingPolicyError,
    SlidingServe,
    by_name,
    default_predictor,
)
from slidingpolicy._io import replace_atomically
from slidingpolicy._parse import parse_json
from slidingpolicy.codec import log_line, parse_line
from slidingpolicy.policies.fixed_budget import Stateless

STATE = SchedulerState(1.0, (Request("a", 0.0, 10, 0, 0, 3.0, 0.1),), 8000.0)


def test_load_takes_a_str_path(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    default_predictor().save(str(path))
    assert LatencyPredictor.load(str(path)) == default_predictor()


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (bytes(range(256)), ":2: not UTF-8"),  # byte 0x80 follows the newline 0x0a
        (b'{"format": "slidingpolicy.predictor", "version": 1, "x": 1e999}', "too large"),
        (b'{"format": "slidingpolicy.predictor", "version": 1, "models": NaN}', "NaN"),
    ],
)
def test_load_rejects_binary_and_non_finite_files(
    tmp_path: Path, content: bytes, needle: str
) -> None:
    path = tmp_path / "p.json"
    path.write_bytes(content)
    with pytest.raises(SlidingPolicyError, match=needle):
        LatencyPredictor.load(path)


def test_load_rejects_what_is_not_a_path() -> None:
    with pytest.raises(SlidingPolicyError, match=r"path: must be a str or os\.PathLike, got int"):
        LatencyPredictor.load(3)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("build", "needle"),
    [
        (lambda: SlidingServe(None), "predictor must be a LatencyPredictor, got NoneType"),  # type: ignore[arg-type]
        (
            lambda: SlidingServe(default_predictor(), {"window": 3}),  # type: ignore[arg-type]
            "config must be a SlidingConfig, got dict",
        ),
        (lambda: SlidingConfig(window=10**4), "window=10000 must be <= 16"),
        (
            lambda: SlidingServe(default_predictor()).plan(None, STATE),  # type: ignore[arg-type]
            "pstate must be a SlidingState, got NoneType",
        ),
        (
            lambda: by_name("qoserve", default_predictor()).plan(None, STATE),
            "pstate must be a QoServeState, got NoneType",
        ),
        (
            lambda: by_name("vllm", default_predictor()).plan(Stateless(), None),  # type: ignore[arg-type]
            "state must be a SchedulerState, got NoneType",
        ),
    ],
)
def test_a_wrong_argument_is_named_where_it_is_given(build: Any, needle: str) -> None:
    with pytest.raises(SlidingPolicyError, match=needle):
        build()


@pytest.mark.parametrize("name", ["slidingserve", "vllm", "qoserve"])
@pytest.mark.parametrize("latency", [math.nan, -1.0, math.inf])
def test_observe_rejects_a_latency_that_is_not_one(name: str, latency: float) -> None:
    policy = by_name(name, default_predictor())
    pstate = policy.init()
    plan, pstate = policy.plan(pstate, STATE)
    with pytest.raises(SlidingPolicyError, match="observation: latency"):
        policy.observe(pstate, STATE, plan, latency)


def test_the_plan_branch_is_a_closed_set_of_strings_and_its_policy_an_open_name() -> None:
    with pytest.raises(SlidingPolicyError, match="branch='chunkr' is not one of chunker"):
        BatchPlan((), "chunkr", "slidingserve", 0, 0.0)
    with pytest.raises(SlidingPolicyError, match="batch plan: policy must be a str, got 7"):
        BatchPlan((), "idle", 7, 0, 0.0)  # type: ignore[arg-type]
    plan = BatchPlan((Allocation("a", 10),), "chunker", "slidingserve", 10, 0.01)
    assert plan.branch is PlanBranch.CHUNKER
    assert plan.branch == "chunker"  # type: ignore[comparison-overlap]
    written = json.loads(log_line(STATE, plan, 64))["plan"]
    assert (written["branch"], written["policy"]) == ("chunker", "slidingserve")
    assert parse_line(log_line(STATE, plan, 64))[1] == plan


def test_parse_json_rejects_what_json_lets_through() -> None:
    for text in ("NaN", "-Infinity", "1e400", "9" * 30):
        with pytest.raises(ValueError, match=r"NaN|Infinity|too large"):
            parse_json(text)
    assert parse_json('{"a": [1, 2.5]}') == {"a": [1, 2.5]}


def test_an_interrupted_write_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    path.write_text("old")

    def interrupted() -> None:
        with replace_atomically(path) as temporary:
            temporary.write_text("half")
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        interrupted()
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]


def test_online_observe_names_a_plan_request_that_is_not_live() -> None:
    policy = by_name("slidingserve", default_predictor(), refit_every=10)
    pstate = policy.init()
    ghost = BatchPlan((Allocation("ghost", 10),), "chunker", "slidingserve", 10, 0.01)
    with pytest.raises(SlidingPolicyError, match="observation: plan allocates 'ghost', not live"):
        policy.observe(pstate, STATE, ghost, 0.01)
