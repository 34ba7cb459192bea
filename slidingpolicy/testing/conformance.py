"""The acceptance test of an engine binding: what every engine that runs a policy must show.

A binding subclasses `ConformanceSuite` in its tests and gives it a `harness` fixture, an
object of the `Harness` protocol that runs jobs through its engine with the policy's loop
(`slidingpolicy.embedding.PolicyLoop`) and, when it has a server, serves it::

    class TestConformance(ConformanceSuite):
        @pytest.fixture
        def harness(self, tmp_path: Path) -> Harness:
            return MyEngineHarness(tmp_path)

The suite holds it to this: every request finishes with what it asked and the step trace
passes the checker; a request the policy cannot represent is refused alone (its client told
why) while the others keep the policy; a policy that raises falls back for that step only,
counted; a plan that breaks an invariant, or asks more tokens than the engine holds this
step, is never executed; a request given up reaches its client with the notice; SLO keys no
request may have are refused at the door naming the key; a step of the wall clock moves no
deadline; a request whose client leaves is cancelled in the engine and counted; the metrics
are exported under their names; and, over its server, a malformed SLO is answered 400, a
client that disconnects mid-stream leaves no traceback in the log.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from slidingpolicy.embedding.loop import PolicyLoop
from slidingpolicy.embedding.notices import GIVEN_UP_NOTICE, REFUSED, REFUSED_NOTICE
from slidingpolicy.embedding.wire import WIRE, slo_on_wire
from slidingpolicy.errors import InvalidRecordError
from slidingpolicy.invariants import check_plan
from slidingpolicy.policies import by_name
from slidingpolicy.step_trace import TraceStep, parse_step
from slidingpolicy.telemetry import METRICS
from slidingpolicy.testing.faults import Faulty, Poisoned
from slidingpolicy.testing.harness import Finished, Harness, Job, Run, Served, Trial

WORKLOAD = tuple(Job(40 + 60 * i, 4 + i % 3, 0.005 * i, {"ttft_slo": 5.0}) for i in range(6))
BAD_SLOS = (
    ({"ttft_slo": -1}, "ttft_slo"),
    ({"ttft_slo": "abc"}, "ttft_slo"),
    ({"ttft_slo": True}, "ttft_slo"),
    ({"tbt_slo": 1e308}, "tbt_slo"),
    ({"tbt_slo": [1, 2]}, "tbt_slo"),
    ({"protected": "yes"}, "protected"),
    ({"protected": 2}, "protected"),
    ([1, 2], "vllm_xargs"),
)


BAD_CONFIGS = (
    ({"polcy": "slidingserve"}, "polcy"),
    ({"ttft_slo": 0}, "ttft_slo"),
    ({"tbt_slo": float("nan")}, "tbt_slo"),
    ({"options": [1]}, "options"),
    ({"check_plans": "yes"}, "check_plans"),
    ({"trace": ""}, "trace"),
    ({"predictor": "/no/such/file.json"}, "predictor"),
    ({"policy": "qoserve", "options": {"kappa": -1.0}}, "kappa"),
    ({"policy": "sarathi-edf[token_budget=0]"}, "token_budget"),
    ({"policy": "sarathi[token_budget=256", "options": {}}, "policy"),
    ({"policy": "sarathi[token_budget=256]", "options": {"token_budget": 128}}, "options"),
)
"""Adapter configs no engine starts with, and the field each names."""


def _refusal(slo: object) -> InvalidRecordError | None:
    """What the one reader of SLOs on the wire says of `slo`."""
    try:
        slo_on_wire(slo)
    except InvalidRecordError as error:
        return error
    return None


def _steps(trace: Path) -> list[TraceStep]:
    """The steps of a trace."""
    return [parse_step(line) for line in trace.read_text().splitlines()]


def _completed(run: Run) -> dict[str, int]:
    """The tokens of each request that ran to its end."""
    return {
        rid: f.tokens for rid, f in run.finished.items() if f.notice is None and not f.cancelled
    }


def _everyone(jobs: Sequence[Job]) -> dict[str, int]:
    """The tokens each job asks, by request id."""
    return {f"r{i}": job.output for i, job in enumerate(jobs)}


class ConformanceSuite:
    """The cases; a binding's test class inherits them and gives `harness`."""

    @pytest.fixture
    def harness(self) -> Harness:
        """The binding's harness: every subclass gives its own."""
        raise NotImplementedError("a binding's TestConformance gives the harness fixture")

    def test_every_request_finishes_and_the_trace_passes_the_checker(
        self, harness: Harness, tmp_path: Path
    ) -> None:
        trace = tmp_path / "trace.jsonl"
        run = harness.run(Trial(WORKLOAD, {"policy": "slidingserve+", "trace": str(trace)}))
        assert run.finished == {rid: Finished(n) for rid, n in _everyone(WORKLOAD).items()}
        assert run.loop.faults == {}
        steps = _steps(trace)
        assert steps
        assert len(steps) == run.loop.steps
        for step in steps:
            assert step.plan is not None
            assert step.fallback is None
            assert check_plan(step.state, step.plan, token_budget=step.token_budget) == []
            assert step.latency is not None
            assert step.latency >= 0
            assert step.scheduled is not None
            assert {a.request_id: a.tokens for a in step.scheduled} == step.plan.tokens_of()

    def test_a_request_the_policy_cannot_represent_is_refused_alone(
        self, harness: Harness, tmp_path: Path
    ) -> None:
        trace = tmp_path / "trace.jsonl"

        def poison(loop: PolicyLoop[Any]) -> None:
            loop.view = Poisoned(loop.view, frozenset({"r2"}))

        run = harness.run(Trial(WORKLOAD, {"policy": "sarathi-edf", "trace": str(trace)}, poison))
        refused = run.finished["r2"]
        assert refused.notice is not None
        assert refused.notice.startswith(f"{REFUSED_NOTICE} 'r2'")
        others = _everyone(WORKLOAD)
        del others["r2"]
        assert _completed(run) == others
        assert run.loop.faults == {REFUSED: 1}
        steps = _steps(trace)
        assert all(s.fallback is None for s in steps), "the others keep the policy"
        assert all(s.state.request("r2") is None for s in steps)

    @pytest.mark.parametrize("breaks", ["raise", "invalid"])
    def test_a_broken_policy_falls_back_for_that_step_only(
        self, harness: Harness, tmp_path: Path, breaks: str, caplog: pytest.LogCaptureFixture
    ) -> None:
        trace = tmp_path / "trace.jsonl"
        faulty: list[Faulty] = []

        def break_every_third(loop: PolicyLoop[Any]) -> None:
            faulty.append(Faulty(loop.policy, 3, "raise" if breaks == "raise" else "invalid"))
            loop.policy = faulty[0]

        config = {"policy": "sarathi-edf", "trace": str(trace)}
        with caplog.at_level(logging.WARNING, logger="slidingpolicy.embedding"):
            run = harness.run(Trial(WORKLOAD, config, break_every_third))
        assert _completed(run) == _everyone(WORKLOAD)
        kind = "policy raised ZeroDivisionError" if breaks == "raise" else "plan breaks invariant"
        assert len(run.loop.faults) == 1
        (found, count), *_ = run.loop.faults.items()
        assert found.startswith(kind)
        assert count == faulty[0].broken > 0
        logged = [r for r in caplog.records if found in r.getMessage()]
        assert len(logged) == 1, "logged once per kind"
        steps = _steps(trace)
        fallbacks = [s for s in steps if s.fallback is not None]
        assert len(fallbacks) == count
        for step in fallbacks:
            ran = {a.request_id: a.tokens for a in step.scheduled or ()}
            assert step.plan is None or ran != step.plan.tokens_of(), "never executed"
        for step in steps:
            if step.fallback is None:
                assert step.plan is not None
                assert check_plan(step.state, step.plan, token_budget=step.token_budget) == []

    def test_a_plan_past_the_engines_budget_is_never_executed(
        self, harness: Harness, tmp_path: Path
    ) -> None:
        trace = tmp_path / "trace.jsonl"
        engine = 64

        def overreach(loop: PolicyLoop[Any]) -> None:
            loop.policy = by_name("sarathi", loop.config.load_predictor(), token_budget=4 * engine)
            loop.pstate = loop.policy.init()

        config = {"policy": "sarathi[token_budget=64]", "trace": str(trace)}
        run = harness.run(Trial(WORKLOAD, config, overreach, engine_budget=engine))
        assert _completed(run) == _everyone(WORKLOAD)
        assert run.loop.faults, "some plan asked more than the engine holds"
        assert set(run.loop.faults) == {"plan breaks invariant 4"}
        for step in _steps(trace):
            assert step.token_budget == engine
            assert sum(a.tokens for a in step.scheduled or ()) <= engine
            if step.fallback is None:
                assert step.plan is not None
                assert step.plan.total_tokens <= engine

    def test_a_request_given_up_reaches_its_client_with_the_notice(self, harness: Harness) -> None:
        jobs = [Job(300, 3, 0.0, {"ttft_slo": 1e-3}) for _ in range(8)]
        policy = "slidingserve+[give_up_after=0.001,max_batch_tokens=64,learn=false]"
        run = harness.run(Trial(jobs, {"policy": policy}, engine_budget=64))
        notices = {rid: f.notice for rid, f in run.finished.items() if f.notice is not None}
        assert notices, "the requests waiting past their deadline were given up"
        assert all(n.startswith(f"{GIVEN_UP_NOTICE} {rid!r}") for rid, n in notices.items())
        assert run.loop.given_up == len(notices)
        for rid, finished in run.finished.items():
            assert finished.notice is not None or finished.tokens == 3, rid

    @pytest.mark.parametrize(("slo", "key"), BAD_SLOS)
    def test_slo_keys_no_request_may_have_are_refused_naming_the_key(
        self, harness: Harness, slo: object, key: str
    ) -> None:
        expected = str(_refusal(slo))
        assert expected.startswith((f"{WIRE}: {key}", f"request: {key}="))
        assert list(harness.admit(slo)) == [expected] * len(harness.admit(slo))

    @pytest.mark.parametrize(
        "slo", [None, {}, {"ttft_slo": 2, "tbt_slo": 0.05}, {"protected": True}, {"protected": 1}]
    )
    def test_slo_keys_a_request_may_have_are_admitted(self, harness: Harness, slo: object) -> None:
        verdicts = harness.admit(slo)
        assert verdicts
        assert set(verdicts) == {None}

    @pytest.mark.parametrize(("config", "field"), BAD_CONFIGS)
    def test_a_bad_setting_is_refused_naming_its_field(
        self, harness: Harness, config: dict[str, Any], field: str
    ) -> None:
        with pytest.raises(InvalidRecordError) as refused:
            harness.run(Trial(WORKLOAD[:1], config))
        assert refused.value.field == field

    def test_a_step_of_the_wall_clock_moves_no_deadline(
        self, harness: Harness, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        trace = tmp_path / "trace.jsonl"
        wall = time.time

        def step_back(loop: PolicyLoop[Any]) -> None:
            monkeypatch.setattr(time, "time", lambda: wall() - 3600.0)

        config = {"policy": "slidingserve+", "trace": str(trace)}
        run = harness.run(Trial(WORKLOAD, config, step_back))
        assert _completed(run) == _everyone(WORKLOAD)
        assert run.loop.faults == {}
        nows = [step.state.now for step in _steps(trace)]
        assert nows == sorted(nows)
        assert 0.0 <= nows[0] <= nows[-1] < 600.0

    def test_a_request_whose_client_leaves_is_cancelled_and_counted(
        self, harness: Harness, tmp_path: Path
    ) -> None:
        trace = tmp_path / "trace.jsonl"
        jobs = [*WORKLOAD[:3], Job(60, 40, 0.0, {}, leave_after=2)]
        run = harness.run(Trial(jobs, {"policy": "slidingserve+", "trace": str(trace)}))
        left = run.finished["r3"]
        assert left.cancelled
        assert left.tokens < 40
        assert run.loop.cancelled == 1
        assert _completed(run) == {f"r{i}": WORKLOAD[i].output for i in range(3)}
        last = max(i for i, s in enumerate(_steps(trace)) if s.state.request("r3") is not None)
        assert last < len(_steps(trace)) - 1, "the engine stopped computing it"

    def test_the_metrics_are_exported_under_their_names(self, harness: Harness) -> None:
        harness.run(Trial(WORKLOAD[:2], {"policy": "slidingserve+"}))
        from prometheus_client.parser import text_string_to_metric_families

        kinds = {f.name: f.type for f in text_string_to_metric_families(harness.metrics())}
        for spec in METRICS:
            assert kinds.get(spec.name.removesuffix("_total")) == spec.kind, spec.name

    def test_over_the_server_a_malformed_slo_is_answered_400_naming_the_key(
        self, harness: Harness
    ) -> None:
        with _served(harness, {"policy": "slidingserve+"}) as served:
            for stream in (False, True):
                for slo, key in BAD_SLOS:
                    body = {"model": served.model, "prompt": [1, 2, 3], "max_tokens": 2,
                            "stream": stream, "vllm_xargs": slo}  # fmt: skip
                    status, text = asyncio.run(_post(served.url, body))
                    assert status == 400, (slo, text)
                    assert key in json.loads(text)["error"]["message"]

    def test_over_the_server_a_client_that_disconnects_is_cancelled_quietly(
        self, harness: Harness
    ) -> None:
        with _served(harness, {"policy": "slidingserve+"}) as served:
            start = served.log.stat().st_size
            asyncio.run(_leave_mid_stream(served))
            for _ in range(100):
                if _sample(asyncio.run(_get(served.url, "/metrics")), "cancelled") >= 1:
                    break
                time.sleep(0.1)
            assert _sample(asyncio.run(_get(served.url, "/metrics")), "cancelled") >= 1
            status, _ = asyncio.run(_post(served.url, _body(served, 20, 3)))
            assert status == 200, "the server goes on"
            # read while the server runs: what an engine logs as it is stopped (vLLM's
            # abort of its engine core) is not the client's leaving
            with served.log.open("rb") as log:
                log.seek(start)
                logged = log.read().decode(errors="replace")
        at = logged.find("Traceback")
        assert at < 0, f"the server logged a traceback as the client left:\n{logged[at:][:4000]}"


@contextlib.contextmanager
def _served(harness: Harness, config: Mapping[str, Any]) -> Iterator[Served]:
    server = harness.serve(config)
    if server is None:
        pytest.skip("the binding has no server")
    with server as served:
        yield served


def _body(served: Served, prompt: int, output: int, stream: bool = False) -> dict[str, Any]:
    """A completion of `prompt` token ids asking exactly `output` tokens."""
    return {"model": served.model, "prompt": [1 + k % 50 for k in range(prompt)],
            "max_tokens": output, "stream": stream, "ignore_eos": True}  # fmt: skip


def _sample(text: str, name: str) -> float:
    """The value of the policy's counter `slidingpolicy_requests_<name>_total` in `text`."""
    wanted = f"slidingpolicy_requests_{name}_total "
    return sum(float(line.split()[-1]) for line in text.splitlines() if line.startswith(wanted))


async def _post(url: str, body: object) -> tuple[int, str]:
    import aiohttp

    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{url}/v1/completions", json=body) as response,
    ):
        return response.status, await response.text()


async def _get(url: str, path: str) -> str:
    import aiohttp

    async with aiohttp.ClientSession() as session, session.get(f"{url}{path}") as response:
        return await response.text()


async def _leave_mid_stream(served: Served) -> None:
    """Ask a long stream, read its first token event, and disconnect."""
    import aiohttp

    async with aiohttp.ClientSession() as session:
        body = _body(served, 100, 800, stream=True)
        async with session.post(f"{served.url}/v1/completions", json=body) as response:
            assert response.status == 200, await response.text()
            async for line in response.content:
                if line.startswith(b"data:"):
                    break
            response.close()
