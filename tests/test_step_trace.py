"""The step trace: the engine traces every step with the batch that ran and the latency it
measured; a line round-trips; a malformed trace is refused with file:line."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slidingpolicy.engine import EngineOptions, simulate
from slidingpolicy.engine.noise import Normals, engine_rng
from slidingpolicy.errors import TraceFormatError
from slidingpolicy.records.plan import Allocation
from slidingpolicy.records.state import SchedulerState
from slidingpolicy.step_trace import (
    DECODE_RUN,
    TraceStep,
    parse_step,
    read_samples,
    step_sample,
)
from slidingpolicy.testing.strategies import states
from slidingpolicy.workloads import Poisson, make_workload
from tests.engine.conftest import HARDWARE, Fcfs, hardware

SEED = 7


def _steps(closed_form: bool = True, kv: int | None = None) -> list[TraceStep]:
    steps: list[TraceStep] = []
    workload = make_workload("mixed-v1", 40, Poisson(1.5), SEED)
    options = EngineOptions(closed_form=closed_form, kv_capacity_tokens=kv)
    simulate(Fcfs(), workload, hardware(*HARDWARE[0]), SEED, options, on_step=steps.append)
    return steps


def test_every_iteration_is_a_step_with_the_latency_the_engine_drew() -> None:
    """Each measured step's latency is the hardware's latency of its batch (contexts from its
    state) with the noise of the engine's next normal: the trace is the engine's own record."""
    model = hardware(*HARDWARE[0])
    normals = Normals(engine_rng(SEED))
    measured = [s for s in _steps() if s.latency is not None]
    for step in measured:
        batch = step.batch()
        assert batch is not None
        assert step.latency == model.with_noise(model.latency_of(*batch), normals.take())
    assert any(s.plan is None and s.fallback == DECODE_RUN for s in measured)
    assert any(s.plan is not None and s.fallback is None for s in measured)


def test_closed_form_runs_trace_the_steps_stepping_traces() -> None:
    """The steps of a decode-only run advanced at once are those of stepping it (state, batch,
    latency); only the plan differs: none asked, where stepping asked the policy."""

    def seen(step: TraceStep) -> tuple[object, ...]:
        state = step.state
        requests = sorted(state.requests, key=lambda r: r.id)
        scheduled = sorted((a.request_id, a.tokens) for a in step.scheduled or ())
        return (state.now, state.kv_free_tokens, requests, scheduled, step.latency)

    closed, stepped = _steps(True, 12000), _steps(False, 12000)
    assert [seen(s) for s in closed] == [seen(s) for s in stepped]
    assert sum(s.plan is None for s in closed) > len(closed) // 10
    assert all(s.plan is not None for s in stepped)


def test_engine_steps_round_trip_through_their_lines() -> None:
    steps = _steps(kv=12000)
    assert [parse_step(s.to_line()) for s in steps] == steps


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(states(), st.data())
def test_a_step_round_trips(state: SchedulerState, data: st.DataObject) -> None:
    ids = [r.id for r in state.requests]
    chosen = data.draw(st.lists(st.sampled_from(ids), unique=True)) if ids else []
    scheduled = tuple(Allocation(i, data.draw(st.integers(1, 4096))) for i in chosen)
    latency = data.draw(st.none() | st.floats(0.0, 1e3))
    fallback = data.draw(st.none() | st.text(max_size=20))
    step = TraceStep(state, None, data.draw(st.none() | st.integers(1, 8192)), scheduled,
                     fallback, latency)  # fmt: skip
    assert parse_step(step.to_line()) == step


GOOD = (
    '{"state": {"now": 1.0, "prefill_throughput": 8000.0, "requests": ['
    '{"id": "a", "arrival": 0.5, "prompt_tokens": 100, "prefilled": 100, "generated": 3, '
    '"ttft_slo": 3.0, "tbt_slo": 0.1}, '
    '{"id": "b", "arrival": 0.9, "prompt_tokens": 300, "prefilled": 0, "generated": 0, '
    '"ttft_slo": 3.0, "tbt_slo": 0.1}]}, '
    '"plan": null, "token_budget": 2048, "scheduled": {"a": 1, "b": 256}, '
    '"fallback": "policy raised ValueError", "latency": 0.05}'
)


PLAN = '{"allocations": [["a", 1]], "path": "vllm", "prefill_budget": 0, "predicted_latency": 0.0}'


def _line(**fields: str) -> str:
    """GOOD with some fields' JSON text replaced (or dropped, for '')."""
    import json

    document = json.loads(GOOD)
    for name, text in fields.items():
        if text:
            document[name] = json.loads(text)
        else:
            del document[name]
    return json.dumps(document)


def test_a_step_is_its_batch_and_measured_latency(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text(GOOD + "\n")
    (sample,) = read_samples([trace]).samples
    assert (sample.chunks, sample.contexts, sample.latency) == ((1, 256), (103, 0), 0.05)


@pytest.mark.parametrize(
    ("line", "needle"),
    [
        ("{", "not JSON"),
        ("[1]", "must be a JSON object"),
        (_line(state=""), "missing field 'state'"),
        (_line(scheduled="", fallback="", latency="", plan=PLAN), "not a step"),
        (_line(latency="-0.5"), "latency: must be null or seconds >= 0"),
        (_line(latency='"fast"'), "latency: must be null or seconds >= 0"),
        (_line(scheduled='[["a", 1]]'), "scheduled: must be a JSON object"),
        (_line(scheduled='{"a": 0}'), "tokens"),
        (_line(scheduled='{"a": 2000000000}'), "above"),
        (_line(fallback="3"), "fallback: must be null or a str"),
        (_line(token_budget="0"), "token_budget"),
        (_line(plan='{"allocations": []}'), "missing field 'branch'"),
    ],
)
def test_a_malformed_line_is_named_by_file_and_line(line: str, needle: str, tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text(GOOD + "\n\n" + line + "\n")
    with pytest.raises(TraceFormatError) as raised:
        read_samples([trace])
    assert f"{trace}:3: " in str(raised.value)
    assert needle in str(raised.value)
    assert "expected JSONL" in str(raised.value)


def test_a_step_written_before_plans_named_their_branch_is_read_as_its_branch(
    tmp_path: Path,
) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text(_line(plan=PLAN) + "\n")
    (sample,) = read_samples([trace]).samples
    assert (sample.chunks, sample.latency) == ((1, 256), 0.05)
    plan = parse_step(_line(plan=PLAN)).plan
    assert plan is not None
    assert (plan.branch, plan.policy) == ("whole", "vllm")


def test_steps_without_a_measured_batch_are_skipped_and_counted(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    lines = [
        GOOD,
        _line(latency="null"),
        _line(scheduled="{}", latency="null"),
        _line(scheduled="{}"),
        _line(scheduled='{"gone": 1}'),
        _line(latency="", fallback=""),
    ]
    trace.write_text("\n".join(lines) + "\n")
    found = read_samples([trace, trace])
    assert len(found.samples) == 2
    assert found.steps == 12
    assert found.describe_skipped() == (
        "10 of 12 steps skipped (6 latency null, 2 nothing scheduled, "
        "2 a scheduled request not in the state)"
    )


@pytest.mark.parametrize(
    ("text", "needle"),
    [("", "(no steps)"), (_line(latency="null") + "\n", "(1 of 1 steps skipped (1 latency null))")],
)
def test_a_trace_with_no_measured_step_is_refused(text: str, needle: str, tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text(text)
    with pytest.raises(TraceFormatError, match="no step with a measured batch") as raised:
        read_samples([trace])
    assert needle in str(raised.value)


def test_a_missing_trace_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(TraceFormatError, match="no such file"):
        read_samples([tmp_path / "absent.jsonl"])


def test_a_line_without_scheduled_is_a_plain_log_line() -> None:
    plain = parse_step(_line(scheduled="", fallback="", latency="", plan=PLAN))
    assert (plain.scheduled, plain.fallback, plain.latency) == (None, None, None)
    assert plain.plan is not None
    assert parse_step(_line(scheduled="")).plan is None


def test_step_sample_says_why_a_step_gives_none() -> None:
    step = parse_step(GOOD)
    assert step_sample(parse_step(_line(latency="null"))) == "no_latency"
    assert step_sample(parse_step(_line(scheduled="{}"))) == "nothing_ran"
    assert step_sample(parse_step(_line(scheduled='{"x": 1}'))) == "unknown_request"
    assert not isinstance(step_sample(step), str)
