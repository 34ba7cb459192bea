"""Early notice: under `give_up_after`, a waiting request whose TTFT deadline passed that long
ago is finished alone with a reason that says so (its client may retry elsewhere), counted
on /metrics, never scheduled again, while the others keep the policy's plans."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from prometheus_client import REGISTRY
from slidingpolicy.embedding import GIVEN_UP_NOTICE
from vllm.v1.engine import EngineCoreOutput

from slidingpolicy_vllm import AsyncSlidingScheduler, SlidingScheduler
from slidingpolicy_vllm.testing import make_scheduler
from tests.driver import Job, drive
from tests.test_isolation import REFUSED_AS, _planned_only, _told

COUNTER = "slidingpolicy_requests_given_up_total"


@pytest.mark.parametrize("cls", [SlidingScheduler, AsyncSlidingScheduler])
def test_hopeless_requests_are_finished_early_with_their_reason(
    model_dir: Path, cls: type[SlidingScheduler]
) -> None:
    config = {"slidingpolicy": {"policy": "slidingserve+[give_up_after=0.01]"}}
    # two running slots: the late ones wait, and are given up once 10 ms past their deadline
    scheduler = make_scheduler(cls, model_dir, num_blocks=256, max_num_seqs=2,
                               additional_config=config)  # fmt: skip
    assert isinstance(scheduler, SlidingScheduler)
    # the snapshot starts arrivals at the scheduler's start, so a deadline of 1 ms is 1 ms
    # after it at the latest: 20 ms later, the late ones are past it + 10 ms at the first plan
    time.sleep(0.02)
    before = REGISTRY.get_sample_value(COUNTER) or 0.0
    calm = [Job(prompt=40, output=30, arrive=0, extra={"ttft_slo": 30.0}) for _ in range(2)]
    hopeless: dict[str, object] = {"ttft_slo": 1e-3}
    late = [Job(prompt=40, output=3, arrive=0, extra=hopeless, waited=0.05) for _ in range(4)]
    sent: list[EngineCoreOutput] = []
    requests = drive(scheduler, [*calm, *late], asynchronous=cls is AsyncSlidingScheduler,
                     check=_planned_only, sent=sent)  # fmt: skip
    given_up = [r for r in requests.values() if r.status == REFUSED_AS]
    assert {r.request_id for r in given_up} <= {f"r{i}" for i in range(2, 6)}
    assert given_up, "at least one late request waited past its deadline + 10 ms"
    for request in given_up:
        reason = _told(sent, request)
        assert reason.startswith(
            f"{GIVEN_UP_NOTICE} {request.request_id!r}: its TTFT deadline passed"
        )
        assert reason.endswith("retry it elsewhere")
        assert request.num_computed_tokens == 0, "never scheduled"
    assert all(requests[f"r{i}"].is_finished() for i in range(6))
    assert (REGISTRY.get_sample_value(COUNTER) or 0.0) - before == len(given_up)
    assert not scheduler.sliding.faults, "giving up is no fault"
