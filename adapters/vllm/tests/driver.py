"""Run a scheduler over a workload, step by step, with hand-built model outputs.

Async mode delivers each step's output after the next step is scheduled, as vLLM's engine
does with one batch in flight.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Sequence

import attrs
from vllm.v1.core.sched.output import SchedulerOutput
from vllm.v1.engine import EngineCoreOutput
from vllm.v1.outputs import ModelRunnerOutput
from vllm.v1.request import Request, RequestStatus

from slidingpolicy_vllm import SlidingScheduler
from slidingpolicy_vllm.testing import make_request, model_output


@attrs.frozen
class Job:
    """A request to add at step `arrive`, with its arrival time `waited` seconds before the
    run started."""

    prompt: int
    output: int
    arrive: int
    extra: dict[str, object] | None = None
    waited: float = 0.0
    leave_after: int | None = None
    """Its client leaves (vLLM aborts it) once it has this many output tokens."""


@attrs.frozen
class Before:
    """What a step's checks need from before `schedule()`."""

    budget: int
    running: frozenset[str]
    waiting: frozenset[str]


StepCheck = Callable[[SlidingScheduler, Before, SchedulerOutput], None]


def drive(
    scheduler: SlidingScheduler,
    jobs: Sequence[Job],
    *,
    asynchronous: bool,
    check: StepCheck | None = None,
    max_steps: int = 5000,
    sent: list[EngineCoreOutput] | None = None,
) -> dict[str, Request]:
    """Run until every job has finished (or `max_steps`); returns the requests by id, and
    appends to `sent` every output `update_from_output` returns for the clients."""
    requests: dict[str, Request] = {}
    in_flight: deque[tuple[SchedulerOutput, ModelRunnerOutput]] = deque()
    start = time.time()
    probe = make_request("probe", 8, 1, start)
    for step in range(max_steps):
        for i, job in enumerate(jobs):
            if job.arrive == step:
                request = make_request(
                    f"r{i}", job.prompt, job.output, start - job.waited, job.extra
                )
                requests[request.request_id] = request
                scheduler.add_request(request)
        before = Before(
            scheduler.max_num_scheduled_tokens,
            frozenset(r.request_id for r in scheduler.running),
            frozenset(
                r.request_id
                for queue in (scheduler.waiting, scheduler.kv_holding_waiting)
                for r in queue
                if r.status in (RequestStatus.WAITING, RequestStatus.PREEMPTED)
            ),
        )
        output = scheduler.schedule()
        assert scheduler.max_num_scheduled_tokens == before.budget, "budget restored"
        assert scheduler._reserve_prefill_lookahead(probe, 0, 8) == 8, "caps lifted"
        if check is not None:
            check(scheduler, before, output)
        in_flight.append((output, model_output(scheduler, output)))
        keep = 1 if asynchronous and output.total_num_scheduled_tokens else 0
        while len(in_flight) > keep:
            outputs = scheduler.update_from_output(*in_flight.popleft())
            if sent is not None:
                sent.extend(out for client in outputs.values() for out in client.outputs)
        for i, job in enumerate(jobs):
            left = requests.get(f"r{i}")
            leave = job.leave_after
            if (
                left
                and leave is not None
                and not left.is_finished()
                and left.num_output_tokens >= leave
            ):
                scheduler.finish_requests(left.request_id, RequestStatus.FINISHED_ABORTED)
        arrived = all(job.arrive <= step for job in jobs)
        if arrived and not in_flight and not scheduler.has_requests():
            return requests
    raise AssertionError(f"not finished after {max_steps} steps")
