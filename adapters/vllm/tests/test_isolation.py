"""Isolation: a request the policy cannot represent is finished alone, with a reason that
names the problem, and every other request keeps the policy: no step falls back to vLLM's
own scheduler, and vLLM runs nothing the plan did not give."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from slidingpolicy.embedding import REFUSED, version_series
from vllm import __version__ as vllm_version
from vllm.v1.core.sched.output import SchedulerOutput
from vllm.v1.engine import EngineCoreOutput
from vllm.v1.request import Request, RequestStatus

from slidingpolicy_vllm import AsyncSlidingScheduler, SlidingScheduler
from slidingpolicy_vllm.refusal import CARRIES_ERROR
from slidingpolicy_vllm.testing import make_scheduler
from tests.driver import Before, Job, drive
from tests.test_scheduler import follows_plan

CLASSES = (SlidingScheduler, AsyncSlidingScheduler)
NORMAL = [
    Job(prompt=20 + (37 * i) % 180, output=3 + i % 5, arrive=i // 3, extra={"ttft_slo": 2.0})
    for i in range(50)
]
POISONS = [
    ({"ttft_slo": 1e308}, "ttft_slo=1e+308"),
    ({"ttft_slo": -1}, "ttft_slo=-1"),
    ({"tbt_slo": 1e-9}, "tbt_slo=1e-09"),
    ({"tbt_slo": "fast"}, "tbt_slo must be a number, got 'fast'"),
    ({"protected": "yes"}, "protected must be a bool, got 'yes'"),
]
"""SLO metadata as it reaches the scheduler when no door stands before it (a front end
other than vLLM's, or one started without `SloDoor`)."""
REFUSED_AS = RequestStatus.FINISHED_ERROR if CARRIES_ERROR else RequestStatus.FINISHED_ABORTED


def _planned_only(scheduler: SlidingScheduler, before: Before, output: SchedulerOutput) -> None:
    """Every step is the policy's plan, and vLLM runs no request the snapshot left out."""
    follows_plan(scheduler, before, output)
    assert scheduler.sliding.decision is not None
    assert scheduler.sliding.decision.state is not None
    seen = {r.id for r in scheduler.sliding.decision.state.requests}
    assert set(output.num_scheduled_tokens) <= seen


def _told(sent: list[EngineCoreOutput], request: Request) -> str:
    """The reason the one final output sent for a refused `request` gives its client."""
    final = [out for out in sent if out.request_id == request.request_id and out.finished]
    assert len(final) == 1
    assert final[0].finish_reason == request.get_finished_reason()
    assert isinstance(final[0].stop_reason, str)
    error: Any = getattr(final[0], "error", None)
    assert (error is not None) is CARRIES_ERROR
    if CARRIES_ERROR:
        assert error.message == final[0].stop_reason
    return final[0].stop_reason


def test_the_reason_travels_as_an_error_where_vllm_carries_one() -> None:
    assert CARRIES_ERROR is (version_series(vllm_version) == (0, 33))


@pytest.mark.parametrize("cls", CLASSES)
@pytest.mark.parametrize(("poison", "named"), POISONS)
def test_a_poisoned_request_among_fifty_is_finished_alone_and_every_step_keeps_the_policy(
    model_dir: Path,
    cls: type[SlidingScheduler],
    poison: dict[str, object],
    named: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    scheduler = make_scheduler(cls, model_dir, num_blocks=1024)
    assert isinstance(scheduler, SlidingScheduler)
    jobs = [*NORMAL[:10], Job(prompt=40, output=5, arrive=2, extra=poison), *NORMAL[10:]]
    sent: list[EngineCoreOutput] = []
    with caplog.at_level(logging.WARNING, logger="slidingpolicy.embedding"):
        requests = drive(
            scheduler,
            jobs,
            asynchronous=cls is AsyncSlidingScheduler,
            check=_planned_only,
            sent=sent,
        )
    poisoned = requests.pop("r10")
    assert poisoned.status == REFUSED_AS
    assert poisoned.num_output_tokens == 0
    told = _told(sent, poisoned)
    assert told.startswith("slidingpolicy cannot schedule request 'r10': vllm_xargs: ")
    assert named in told
    assert "(accepted: " in told
    assert all(r.status == RequestStatus.FINISHED_LENGTH_CAPPED for r in requests.values())
    assert [r.num_output_tokens for r in requests.values()] == [j.output for j in NORMAL]
    assert scheduler.sliding.faults == {REFUSED: 1}
    ours = [r for r in caplog.records if r.name.startswith("slidingpolicy.embedding")]
    logged = [r.getMessage() for r in ours]
    assert len(logged) == 1
    assert told in logged[0]
    assert scheduler.kv_cache_manager.block_pool.get_num_free_blocks() == 1024


@pytest.mark.parametrize("cls", CLASSES)
def test_a_recompute_whose_slo_runs_past_the_longest_time_is_finished_alone(
    model_dir: Path, cls: type[SlidingScheduler]
) -> None:
    """A TTFT SLO of 1e10 s, the longest a record holds, passes the door; after tokens and
    a preemption its recompute would need L_ttft + g·L_tbt beyond it (eq. 1), which no record
    holds. Six blocks hold both prompts, not both outputs: vLLM preempts the later one."""
    scheduler = make_scheduler(cls, model_dir, num_blocks=6)
    assert isinstance(scheduler, SlidingScheduler)
    longest: dict[str, object] = {"ttft_slo": 1e10, "tbt_slo": 1.0}
    jobs = [Job(prompt=40, output=30, arrive=0), Job(prompt=40, output=30, arrive=0, extra=longest)]
    sent: list[EngineCoreOutput] = []
    preempted: set[str] = set()

    def planned(s: SlidingScheduler, before: Before, output: SchedulerOutput) -> None:
        assert s.sliding.decision is not None
        assert s.sliding.decision.fallback is None
        preempted.update(output.preempted_req_ids or ())

    requests = drive(
        scheduler, jobs, asynchronous=cls is AsyncSlidingScheduler, check=planned, sent=sent
    )
    assert preempted == {"r1"}
    assert requests["r0"].status == RequestStatus.FINISHED_LENGTH_CAPPED
    assert requests["r0"].num_output_tokens == 30
    assert requests["r1"].status == REFUSED_AS
    assert 0 < requests["r1"].num_output_tokens < 30
    told = _told(sent, requests["r1"])
    assert told.startswith("slidingpolicy cannot schedule request 'r1': ttft_slo=")
    assert "beyond 1e+10 s" in told
    assert scheduler.sliding.faults == {REFUSED: 1}
    assert scheduler.kv_cache_manager.block_pool.get_num_free_blocks() == 6
