"""Conservation, as a hypothesis state machine over workloads, policies, hardware and KV sizes.

Rules grow a workload request by request and pick the policy, hardware and KV capacity; each
`simulate` rule runs the engine (strict: every plan checked) while a probe watches every step.
"""

from __future__ import annotations

import json
import math

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule

from slidingpolicy.engine import EngineOptions, simulate
from slidingpolicy.policies import by_name, names
from slidingpolicy.runs.results import dumps, outcome_rows
from slidingpolicy.workloads import RequestSpec, Workload
from tests.engine.conftest import HARDWARE, Fcfs, hardware, predictor

POLICIES = ("fcfs", *names())


class EngineMachine(RuleBasedStateMachine):
    """A workload under construction and the engine's settings."""

    @initialize()
    def start(self) -> None:
        self.specs: list[RequestSpec] = []
        self.clock = 0.0
        self.policy = "fcfs"
        self.hardware = HARDWARE[0]
        self.kv: int | None = None

    @rule(
        prompt=st.integers(1, 900),
        output=st.integers(1, 60),
        gap=st.floats(0.0, 0.5),
        ttft=st.sampled_from((0.2, 1.0, 3.0)),
        tbt=st.sampled_from((0.03, 0.1)),
    )
    def arrive(self, prompt: int, output: int, gap: float, ttft: float, tbt: float) -> None:
        if len(self.specs) >= 14:
            return
        self.clock += gap
        rid = f"q{len(self.specs)}"
        self.specs.append(RequestSpec(rid, self.clock, prompt, output, ttft, tbt, "test"))

    @rule(policy=st.sampled_from(POLICIES))
    def choose_policy(self, policy: str) -> None:
        self.policy = policy

    @rule(which=st.sampled_from(HARDWARE))
    def choose_hardware(self, which: tuple[str, str, int]) -> None:
        self.hardware = which

    @rule(kv=st.one_of(st.none(), st.sampled_from((1024, 1600, 4096))))
    def choose_kv(self, kv: int | None) -> None:
        self.kv = kv

    @precondition(lambda self: bool(self.specs))
    @rule(seed=st.integers(0, 2**16), closed_form=st.booleans())
    def simulate(self, seed: int, closed_form: bool) -> None:
        workload = Workload("machine", tuple(self.specs))
        hw = hardware(*self.hardware)
        capacity = self.kv
        if capacity is not None:
            largest = max(s.prompt_tokens + s.output_tokens for s in self.specs)
            capacity = max(capacity, -(-largest // 16) * 16)
        policy = (
            Fcfs() if self.policy == "fcfs" else by_name(self.policy, predictor(*self.hardware))
        )
        options = EngineOptions(strict=True, closed_form=closed_form, kv_capacity_tokens=capacity)
        produced = np.zeros(len(self.specs), dtype=np.int64)
        last = [-math.inf]

        def probe(now: float, used: int, total: int, idx: np.ndarray, n: np.ndarray) -> None:
            assert now >= last[0], "the clock went back"
            last[0] = now
            assert 0 <= used <= total, f"KV blocks in use {used} exceed capacity {total}"
            np.add.at(produced, idx, n)
            assert (produced <= workload.columns().output).all(), "a token produced twice"

        out = simulate(policy, workload, hw, seed, options, probe=probe)
        output = workload.columns().output
        completed = out.outcome.completed
        assert (out.outcome.generated[completed] == output[completed]).all()
        assert (produced == out.outcome.generated).all()
        assert (out.outcome.generated <= output).all()
        assert completed.all() or out.stalled, "a run ended with requests neither done nor live"
        if completed.all():
            assert out.kv_blocks_in_use == 0, "KV not released after everything finished"
        again = simulate(policy, workload, hw, seed, options)
        ids = [s.id for s in self.specs]

        def document(o: object) -> str:
            return dumps(
                {
                    "metrics": o.metrics.to_dict(),  # type: ignore[attr-defined]
                    "requests": outcome_rows(ids, o.outcome),  # type: ignore[attr-defined]
                }
            )

        assert document(out) == document(again), "same seed, different results"
        json.loads(document(out))


TestConservation = EngineMachine.TestCase
TestConservation.settings = settings(
    max_examples=100,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
