"""The adapter against vLLM 0.32's real `Scheduler` and `AsyncScheduler`.

Rule for where vLLM runs fewer tokens than planned (it never runs more): a running request
gets less only when vLLM preempted it to free KV blocks; a waiting request gets all or
nothing, in plan order, and stops getting anything once one of them cannot be admitted:
because vLLM preempted someone this step (it then admits nobody), because `max_num_seqs`
requests are running, or because its whole sequence does not fit in the free KV blocks
(`scheduler_reserve_full_isl`).
"""

from __future__ import annotations

import gc
import math
import time
import weakref
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from vllm.v1.core.sched.output import SchedulerOutput
from vllm.v1.request import RequestStatus

from slidingpolicy_vllm import AsyncSlidingScheduler, SlidingScheduler
from slidingpolicy_vllm.testing import make_request, make_scheduler
from tests.driver import Before, Job, drive

BLOCK = 16
POLICIES = ("slidingserve", "sarathi-edf", "qoserve", "vllm", "sarathi", "greedy")
CLASSES = (SlidingScheduler, AsyncSlidingScheduler)


def jobs(max_prompt: int) -> st.SearchStrategy[list[Job]]:
    """Requests of mixed lengths arriving over the first 40 steps."""
    job = st.builds(
        Job,
        prompt=st.integers(1, max_prompt),
        output=st.integers(1, 24),
        arrive=st.integers(0, 40),
        extra=st.none() | st.fixed_dictionaries({"ttft_slo": st.floats(0.01, 10.0)}),
    )
    return st.lists(job, min_size=1, max_size=14)


def follows_plan(scheduler: SlidingScheduler, before: Before, output: SchedulerOutput) -> None:
    """The step ran the plan, except where the module's rule says vLLM could not."""
    decision = scheduler.sliding.decision
    assert decision is not None
    assert decision.plan is not None
    assert decision.fallback is None, decision.fallback
    planned = decision.plan.tokens_of()
    got = output.num_scheduled_tokens
    assert all(got[i] <= planned.get(i, 0) for i in got), (got, planned)
    preempted = output.preempted_req_ids or set()
    free = scheduler.kv_cache_manager.block_pool.get_num_free_blocks()
    stopped = bool(preempted)
    for rid, tokens in planned.items():
        ran = got.get(rid, 0)
        if rid in before.running:
            assert ran == tokens or rid in preempted, (rid, ran, tokens)
            continue
        assert rid in before.waiting
        if stopped:
            assert ran == 0, f"{rid} admitted after admission stopped"
        elif ran != tokens:
            assert ran == 0, f"waiting {rid} got {ran} of {tokens}: all or nothing"
            request = scheduler.requests[rid]
            full = math.ceil(request.num_tokens / BLOCK)
            running = len(scheduler.running) >= scheduler.max_num_running_reqs
            assert running or full > free, f"{rid} not admitted though {full} <= {free} free"
            stopped = True


@pytest.mark.parametrize("cls", CLASSES)
@pytest.mark.parametrize("policy", POLICIES)
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workload=jobs(max_prompt=600))
def test_tokens_follow_the_plan_and_every_request_finishes(
    model_dir: Path, cls: type[SlidingScheduler], policy: str, workload: list[Job]
) -> None:
    config = {"slidingpolicy": {"policy": policy, "options": _budget(policy)}}
    scheduler = make_scheduler(cls, model_dir, num_blocks=96, additional_config=config)
    assert isinstance(scheduler, SlidingScheduler)
    requests = drive(
        scheduler, workload, asynchronous=cls is AsyncSlidingScheduler, check=follows_plan
    )
    for i, job in enumerate(workload):
        request = requests[f"r{i}"]
        assert request.status == RequestStatus.FINISHED_LENGTH_CAPPED
        assert request.num_output_tokens == job.output
    assert scheduler.kv_cache_manager.block_pool.get_num_free_blocks() == 96, "no KV block leaks"
    assert not scheduler.sliding.faults


def slots_full_leave_waiting_out(
    scheduler: SlidingScheduler, before: Before, output: SchedulerOutput
) -> None:
    """`follows_plan`, and with the running slots full the snapshot holds no waiting request
    (vLLM admits none then), so none is planned or scheduled."""
    follows_plan(scheduler, before, output)
    decision = scheduler.sliding.decision
    assert decision is not None
    assert decision.state is not None
    if len(before.running) >= scheduler.max_num_running_reqs:
        seen = {r.id for r in decision.state.requests}
        assert not seen & before.waiting, "waiting requests snapshotted with the slots full"
        assert not scheduler._view.holding, "nor read as waiting"


@pytest.mark.parametrize("cls", CLASSES)
@pytest.mark.parametrize("policy", ["slidingserve", "sarathi-edf"])
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workload=jobs(max_prompt=120))
def test_full_running_slots_leave_the_waiting_requests_out(
    model_dir: Path, cls: type[SlidingScheduler], policy: str, workload: list[Job]
) -> None:
    """With 2 running slots, the steps where they are full plan no waiting request, and
    every request still finishes."""
    config = {"slidingpolicy": {"policy": policy}}
    scheduler = make_scheduler(
        cls, model_dir, num_blocks=96, max_num_seqs=2, additional_config=config
    )
    assert isinstance(scheduler, SlidingScheduler)
    requests = drive(
        scheduler,
        workload,
        asynchronous=cls is AsyncSlidingScheduler,
        check=slots_full_leave_waiting_out,
    )
    assert all(requests[f"r{i}"].num_output_tokens == job.output for i, job in enumerate(workload))
    assert scheduler.kv_cache_manager.block_pool.get_num_free_blocks() == 96, "no KV block leaks"
    assert not scheduler.sliding.faults


@pytest.mark.parametrize("cls", CLASSES)
def test_full_running_slots_do_occur_with_requests_waiting(
    model_dir: Path, cls: type[SlidingScheduler]
) -> None:
    """The case above is met: steps with both slots running and requests waiting, and
    steps with a free slot where waiting requests are planned."""
    config = {"slidingpolicy": {"policy": "sarathi-edf"}}
    scheduler = make_scheduler(
        cls, model_dir, num_blocks=96, max_num_seqs=2, additional_config=config
    )
    assert isinstance(scheduler, SlidingScheduler)
    full, free = [], []

    def count(s: SlidingScheduler, before: Before, output: SchedulerOutput) -> None:
        slots_full_leave_waiting_out(s, before, output)
        assert s.sliding.decision is not None
        assert s.sliding.decision.plan is not None
        planned = set(s.sliding.decision.plan.tokens_of())
        if len(before.running) == 2 and before.waiting:
            full.append(len(before.waiting))
        elif planned & before.waiting:
            free.append(len(planned & before.waiting))

    workload = [Job(prompt=30, output=8, arrive=0) for _ in range(5)]
    drive(scheduler, workload, asynchronous=cls is AsyncSlidingScheduler, check=count)
    assert full, "no step had both slots full and a request waiting"
    assert free, "no step planned a waiting request"


@pytest.mark.parametrize("cls", CLASSES)
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workload=jobs(max_prompt=120))
def test_preemption_under_a_tiny_kv_cache_keeps_every_request_alive(
    model_dir: Path, cls: type[SlidingScheduler], workload: list[Job]
) -> None:
    config = {"slidingpolicy": {"policy": "slidingserve"}}
    scheduler = make_scheduler(cls, model_dir, num_blocks=10, additional_config=config)
    assert isinstance(scheduler, SlidingScheduler)
    requests = drive(
        scheduler, workload, asynchronous=cls is AsyncSlidingScheduler, check=follows_plan
    )
    assert all(requests[f"r{i}"].num_output_tokens == job.output for i, job in enumerate(workload))
    assert scheduler.kv_cache_manager.block_pool.get_num_free_blocks() == 10


@pytest.mark.parametrize("cls", CLASSES)
def test_a_tiny_kv_cache_does_preempt(model_dir: Path, cls: type[SlidingScheduler]) -> None:
    config = {"slidingpolicy": {"policy": "slidingserve"}}
    scheduler = make_scheduler(cls, model_dir, num_blocks=10, additional_config=config)
    assert isinstance(scheduler, SlidingScheduler)
    preemptions: list[str] = []

    def count(s: SlidingScheduler, before: Before, output: SchedulerOutput) -> None:
        follows_plan(s, before, output)
        preemptions.extend(output.preempted_req_ids or ())

    workload = [Job(prompt=40, output=60, arrive=0) for _ in range(4)]
    requests = drive(scheduler, workload, asynchronous=cls is AsyncSlidingScheduler, check=count)
    assert preemptions, "4 × 100 tokens cannot share 160 KV slots without preemption"
    assert all(r.num_output_tokens == 60 for r in requests.values())
    assert scheduler.kv_cache_manager.block_pool.get_num_free_blocks() == 10


@pytest.mark.parametrize("cls", CLASSES)
def test_finished_requests_are_let_go_at_the_next_step(
    model_dir: Path, cls: type[SlidingScheduler]
) -> None:
    """Once vLLM freed a finished request, the adapter's next step drops what it kept of it,
    so the request object dies (kept, they slowed vLLM's own `schedule()`), while the
    request still running is kept."""
    config = {"slidingpolicy": {"policy": "slidingserve"}}
    scheduler = make_scheduler(cls, model_dir, num_blocks=96, additional_config=config)
    assert isinstance(scheduler, SlidingScheduler)
    workload = [Job(prompt=20, output=3 + i, arrive=i) for i in range(6)]
    requests = drive(scheduler, workload, asynchronous=cls is AsyncSlidingScheduler)
    assert all(
        r.num_output_tokens == job.output
        for r, job in zip(requests.values(), workload, strict=True)
    )
    kept = make_request("kept", 8, 50, time.time())
    scheduler.add_request(kept)
    finished = [weakref.ref(r) for r in requests.values()]
    del requests
    scheduler.schedule()
    gc.collect()
    assert [ref() for ref in finished] == [None] * len(finished), "finished requests kept alive"
    assert scheduler.sliding.decision is not None
    assert scheduler.sliding.decision.state is not None
    assert [r.id for r in scheduler.sliding.decision.state.requests] == ["kept"]


def edf_pair(first_prompt: int) -> list[Job]:
    """r0 (`first_prompt` tokens, TTFT 10 s), then a step later r1 (300 tokens, TTFT 1 s)."""
    return [
        Job(prompt=first_prompt, output=2, arrive=0, extra={"ttft_slo": 10.0}),
        Job(prompt=300, output=2, arrive=1, extra={"ttft_slo": 1.0}),
    ]


@pytest.mark.parametrize("cls", CLASSES)
def test_the_plan_orders_and_chunks_prefills_against_fcfs(
    model_dir: Path, cls: type[SlidingScheduler]
) -> None:
    """EDF on TTFT deadlines (from extra_args) in 64-token chunks: r1, arriving a step after
    r0 with a tighter TTFT, is prefilled first, though vLLM alone would go on chunking r0
    (the running request)."""
    options = {"token_budget": 64}
    config = {"slidingpolicy": {"policy": "sarathi-edf", "options": options}}
    scheduler = make_scheduler(cls, model_dir, num_blocks=96, additional_config=config)
    assert isinstance(scheduler, SlidingScheduler)
    steps: list[dict[str, int]] = []

    def record(s: SlidingScheduler, before: Before, output: SchedulerOutput) -> None:
        follows_plan(s, before, output)
        steps.append(dict(output.num_scheduled_tokens))

    drive(scheduler, edf_pair(300), asynchronous=cls is AsyncSlidingScheduler, check=record)
    assert steps[:6] == [{"r0": 64}] + [{"r1": 64}] * 4 + [{"r1": 44, "r0": 20}]


def _budget(policy: str) -> dict[str, int]:
    """A token budget within the harness's max_num_batched_tokens (2048)."""
    return {"token_budget": 2048} if policy == "vllm" else {}


@pytest.mark.parametrize("cls", CLASSES)
def test_a_capped_chunk_keeps_vllms_prefill_lookahead(
    model_dir: Path, cls: type[SlidingScheduler]
) -> None:
    """With a multi-module MTP drafter's lookahead of 4, vLLM never ends a prefill chunk
    fewer than 4 tokens before the prompt's end; a chunk the plan caps keeps that rule (the
    cap applies first, then vLLM's own limit). The schedule of
    `test_the_plan_orders_and_chunks_prefills_against_fcfs`, with r0's prompt 86 tokens:
    its planned 20-token chunk would stop 2 short, so it runs 18."""
    config = {"slidingpolicy": {"policy": "sarathi-edf", "options": {"token_budget": 64}}}
    scheduler = make_scheduler(cls, model_dir, num_blocks=96, additional_config=config)
    assert isinstance(scheduler, SlidingScheduler)
    scheduler.num_prefill_lookahead = 4
    steps: list[dict[str, int]] = []

    def lookahead(s: SlidingScheduler, before: Before, output: SchedulerOutput) -> None:
        for rid in output.num_scheduled_tokens:
            left = s.requests[rid].num_prompt_tokens - s.requests[rid].num_computed_tokens
            assert not 0 < left < 4, f"{rid}'s chunk ends {left} tokens before its prompt's end"
        steps.append(dict(output.num_scheduled_tokens))

    drive(scheduler, edf_pair(86), asynchronous=cls is AsyncSlidingScheduler, check=lookahead)
    assert steps[:6] == [{"r0": 64}] + [{"r1": 64}] * 4 + [{"r1": 44, "r0": 18}]
