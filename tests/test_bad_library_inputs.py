"""The library's bad-input table: each call raises a `SlidingPolicyError` (a ValueError) whose
message names the record or function and the field, never another exception, a hang, or a
silent wrong result.

`{file}` cases write the bytes to a file first and call with its path.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pytest

from slidingpolicy import (
    Allocation,
    BatchPlan,
    LatencyPredictor,
    LinearModel,
    PricedQueue,
    Request,
    SchedulerState,
    SlidingConfig,
    SlidingPolicyError,
    by_name,
    check_plan,
    construct_batch,
    default_predictor,
    sliding_chunk,
    sort_candidates,
    time_to_budget,
)
from slidingpolicy._parse import read_csv, read_json
from slidingpolicy.codec import parse_line
from slidingpolicy.embedding import require_budget, slo_on_wire
from slidingpolicy.errors import TraceFormatError
from slidingpolicy.hardware import ProfiledModel, RooflineModel, gpu, model
from slidingpolicy.runs.capacity_search import capacities
from slidingpolicy.runs.specs import RunSpec
from slidingpolicy.runs.workers import trial_runner
from slidingpolicy.workloads import Burst, Poisson, TraceTimes, load_trace
from slidingpolicy.workloads.arrivals import arrival_times
from slidingpolicy.workloads.records import RequestSpec, Window, Workload
from slidingpolicy.workloads.slos import dataset_slo, tiered_slos
from tests.bad_input_docs import documented_rows

PREDICTOR = default_predictor()
WAITING = Request("a", 0.0, 10, 0, 0, 3.0, 0.1)
DECODING = Request("d", 0.0, 10, 10, 1, 3.0, 0.1)
STATE = SchedulerState(1.0, (WAITING, DECODING), 8000.0)
PLAN = BatchPlan((Allocation("d", 1), Allocation("a", 10)), "chunker", "slidingserve", 10, 0.01)
FILL = PricedQueue.of(PREDICTOR, [DECODING], [WAITING])
DEEP = "[" * 10_000 + "]" * 10_000
ROOFLINE = RooflineModel(gpu("a100-80g"), model("llama3-8b"), 1)


def _predictor_dict(**changes: Any) -> dict[str, Any]:
    data = PREDICTOR.to_dict()
    data.update(changes)
    return data


def _online_pair() -> tuple[Any, Any]:
    """Online slidingserve and Online slidingserve+ (same predictor, other configuration)."""
    ours = by_name("slidingserve", PREDICTOR, refit_every=5)
    theirs = by_name("slidingserve+", PREDICTOR, refit_every=5)
    return ours, theirs


def _plan_with_anothers_state() -> Any:
    ours, theirs = _online_pair()
    return ours.plan(theirs.init(), STATE)


def _observe_with_anothers_state() -> Any:
    ours, theirs = _online_pair()
    return ours.observe(theirs.init(), STATE, PLAN, 0.01)


def _policy(name: str) -> Any:
    return by_name(name, PREDICTOR)


SLIDING_STATE = _policy("slidingserve").init()


class Case(NamedTuple):
    name: str
    call: Callable[[Path], object]
    needle: str
    content: bytes | None = None


CASES = [
    # the parsing layer
    Case(
        "JSON arrays nested deep",
        lambda path: read_json(path, TraceFormatError, "formats"),
        "input: not JSON a record can hold: nested deeper than 32 levels; formats",
        DEEP.encode(),
    ),
    Case(
        "JSON objects nested deep",
        lambda path: read_json(path, TraceFormatError, "formats"),
        "nested deeper than 32 levels",
        b'{"a":' * 5000 + b"1" + b"}" * 5000,
    ),
    Case(
        "JSON of 17 MiB",
        lambda path: read_json(path, TraceFormatError, "formats"),
        "input: larger than 16 MiB, the most read of such a file; formats",
        b" " * (17 * 2**20),
    ),
    Case(
        "a check log line nested deep",
        lambda _: parse_line('{"state":' * 5000 + "1" + "}" * 5000),
        "not JSON a record can hold: nested deeper than 32 levels",
    ),
    Case(
        "a predictor nested deep",
        LatencyPredictor.load,
        "not JSON a record can hold: nested deeper than 32 levels",
        DEEP.encode(),
    ),
    Case(
        "a predictor from /dev/zero",
        lambda _: LatencyPredictor.load("/dev/zero"),
        "/dev/zero: larger than 16 MiB",
    ),
    Case("a trace from /dev/zero", lambda _: load_trace("/dev/zero"), "/dev/zero:1: a line longer"),
    Case(
        "a CSV column named twice",
        lambda path: read_csv(path, TraceFormatError, "formats"),
        ":1: the header names column 'b' twice; formats",
        b"a,b,c,b\n1,2,3,4\n",
    ),
    Case(
        "a trace column named twice",
        load_trace,
        "the header names column 'num_decode_tokens' twice",
        b"num_prefill_tokens,num_decode_tokens,num_decode_tokens\n5,2,3\n",
    ),
    Case(
        "a trace arrival at 1e300 s",
        load_trace,
        ":3: arrived_at='1e300' is beyond 1e+10 s",
        b"num_prefill_tokens,num_decode_tokens,arrived_at\n5,2,0\n5,2,1e300\n",
    ),
    # physical bounds
    Case(
        "a request arriving at 1e300 s",
        lambda _: Request("r", 1e300, 10, 0, 0, 3.0, 0.1),
        "request 'r': arrival=1e+300 s is beyond 1e+10 s (317 years)",
    ),
    Case(
        "a TTFT SLO of 1e300 s",
        lambda _: Request("r", 0.0, 10, 0, 0, 1e300, 0.1),
        "request 'r': ttft_slo=1e+300 s is beyond 1e+10 s",
    ),
    Case(
        "a state at 1e300 s",
        lambda _: SchedulerState(1e300, (), 8000.0),
        "scheduler state: now=1e+300 s is beyond 1e+10 s",
    ),
    Case(
        "a workload request at 1e300 s",
        lambda _: RequestSpec("r", 1e300, 10, 5, 3.0, 0.1, "sharegpt"),
        "request 'r': arrival=1e+300 s is beyond",
    ),
    Case(
        "a window beyond the workload's requests",
        lambda _: Workload(
            "w", (RequestSpec("r0", 0.0, 10, 5, 3.0, 0.1, "sharegpt"),), Window(0, 2, 0.0, 4.0)
        ),
        "workload 'w': window counts requests 0 to 1, beyond its 1 requests",
    ),
    Case(
        "a window counting no request", lambda _: Window(0, 0, 0.0, 1.0), "window: count=0 must be"
    ),
    Case(
        "a Poisson rate of 1e-300",
        lambda _: Poisson(1e-300),
        "poisson arrivals: rate=1e-300 must be between 1e-06 and 1e+06 req/s",
    ),
    Case("a Poisson rate of 5e-324", lambda _: Poisson(5e-324), "rate=4.94066e-324 must be"),
    Case("a Poisson rate of 1e7", lambda _: Poisson(1e7), "rate=1e+07 must be between"),
    Case("a trace rescaled to 1e-300", lambda _: TraceTimes(1e-300), "trace arrivals: rate=1e-300"),
    Case(
        "a burst starting at 1e300 s",
        lambda _: Burst(1.0, 2.0, 1e300, 10.0),
        "burst arrivals: start=1e+300 s is beyond",
    ),
    Case(
        "arrivals spread past the clock",
        lambda _: arrival_times(Poisson(1e-6), 20_000, np.random.default_rng(0)),
        "poisson arrivals: rate=1e-06 spreads 20000 requests over 1.99e+10 s, beyond the 1e+10 s",
    ),
    Case(
        "an SLO scale of 1e308",
        lambda _: dataset_slo("sharegpt", 1e308),
        "slo: slo_scale=1e+308 stretches SLOs of up to 1800 s beyond the 1e+10 s",
    ),
    Case(
        "tiered SLOs scaled by 1e7",
        lambda _: tiered_slos(np.array([10]), np.random.default_rng(0), 1e7),
        "slo_scale=1e+07 stretches",
    ),
    Case(
        "weights as a string of digits",
        lambda _: LinearModel(0.0, "1234567"),
        "linear model: weights must be a list of numbers, got str",
    ),
    Case(
        "a weight of 1e300",
        lambda _: LinearModel(0.0, (0, 0, 0, 1e300, 0, 0, 0)),
        "linear model: weights[3]=1e+300 s is beyond",
    ),
    Case(
        "an intercept of 1e300",
        lambda _: LinearModel(1e300, (0.0,) * 7),
        "linear model: intercept=1e+300 s is beyond",
    ),
    Case(
        "a version-3 predictor without its tile",
        lambda _: LatencyPredictor.from_dict(_predictor_dict(version=3)),
        "predictor: version 3 (tile-aware) needs its 'tile'",
    ),
    Case(
        "a version-2 predictor with a tile",
        lambda _: LatencyPredictor.from_dict(_predictor_dict(tile=64)),
        "predictor: version 2 has no 'tile'",
    ),
    Case(
        "a profile time that is not finite",
        lambda _: ProfiledModel(ROOFLINE, "p.csv", np.array([8.0, 16.0]), np.array([0.02, np.nan])),
        "profile 'p.csv': dense_seconds must be finite and >= 0",
    ),
    Case(
        "a capacity search from 1e308 req/s",
        lambda _: capacities([RunSpec("sarathi")], 1e308),
        "capacity search: start=1e+308 must be between 0.015625 and 4096 req/s",
    ),
    Case("no workers", lambda _: trial_runner(0).__enter__(), "trials: workers=0 must be >= 1"),
    # arguments at the door
    Case(
        "check_plan with a token budget of -5",
        lambda _: check_plan(STATE, PLAN, token_budget=-5),
        "check_plan: token_budget=-5 must be >= 1",
    ),
    Case(
        "check_plan with a token budget of 'abc'",
        lambda _: check_plan(STATE, PLAN, token_budget="abc"),  # type: ignore[arg-type]
        "check_plan: token_budget must be an int, got 'abc'",
    ),
    Case(
        "check_plan with margin NaN",
        lambda _: check_plan(STATE, PLAN, margin=math.nan),
        "check_plan: margin=nan must be finite",
    ),
    Case(
        "check_plan with margin 0",
        lambda _: check_plan(STATE, PLAN, margin=0.0),
        "check_plan: margin=0.0 must be >= 1",
    ),
    Case(
        "check_plan with a plan that is not one",
        lambda _: check_plan(STATE, {"allocations": []}),  # type: ignore[arg-type]
        "check_plan: plan must be a BatchPlan, got dict",
    ),
    Case(
        "check_plan with a state that is not one",
        lambda _: check_plan(None, PLAN),  # type: ignore[arg-type]
        "check_plan: state must be a SchedulerState, got NoneType",
    ),
    Case(
        "check_plan with a predictor that is not one",
        lambda _: check_plan(STATE, PLAN, predictor="rtx3090"),  # type: ignore[arg-type]
        "check_plan: predictor must be a LatencyPredictor, got str",
    ),
    Case(
        "a request in prefill that has generated tokens",
        lambda _: Request("r", 0.0, 10, 4, 3, 3.0, 0.1),
        "request 'r': generated=3 but the prefill is not complete (prefilled=4 < prompt_tokens=10)",
    ),
    Case(
        "a waiting request that has generated tokens",
        lambda _: Request("r", 0.0, 10, 0, 1, 3.0, 0.1),
        "request 'r': generated=1 but the prefill is not complete",
    ),
    Case(
        "a fixed-budget policy planning on another policy's state",
        lambda _: _policy("vllm").plan(_policy("slidingserve").init(), STATE),
        "policy 'vllm': pstate must be a Stateless, got OnlineState",
    ),
    Case(
        "a fixed-budget policy observing with another policy's state",
        lambda _: _policy("sarathi").observe(_policy("qoserve").init(), STATE, PLAN, 0.01),
        "policy 'sarathi': pstate must be a Stateless, got QoServeState",
    ),
    Case(
        "slidingserve observing with another policy's state",
        lambda _: _policy("slidingserve").observe(_policy("vllm").init(), STATE, PLAN, 0.01),
        "policy 'slidingserve': pstate must be a OnlineState, got Stateless",
    ),
    Case(
        "slidingserve without learning observing with another policy's state",
        lambda _: by_name("slidingserve", PREDICTOR, learn=False).observe(
            _policy("vllm").init(), STATE, PLAN, 0.01
        ),
        "policy 'slidingserve': pstate must be a SlidingState, got Stateless",
    ),
    Case(
        "qoserve observing decodes with another policy's state",
        lambda _: _policy("qoserve").observe_decodes(_policy("vllm").init(), [DECODING], [0.01]),
        "policy 'qoserve': pstate must be a QoServeState, got Stateless",
    ),
    Case(
        "Online(a).plan on Online(b)'s state",
        lambda _: _plan_with_anothers_state(),
        "policy 'slidingserve': pstate is the state of another policy ('slidingserve+'",
    ),
    Case(
        "Online(a).observe on Online(b)'s state",
        lambda _: _observe_with_anothers_state(),
        "is the state of another policy ('slidingserve+', configured otherwise)",
    ),
    Case(
        "observe with a plan that is not one",
        lambda _: _policy("vllm").observe(_policy("vllm").init(), STATE, None, 0.01),
        "observation: plan must be a BatchPlan, got NoneType",
    ),
    Case(
        "observe_decodes with iterations but no decode",
        lambda _: _policy("slidingserve").observe_decodes(SLIDING_STATE, [], [0.01, 0.01]),
        "observe_decodes: latencies holds 2 decode-only iterations, but there is no decode",
    ),
    Case(
        "observe_decodes with a request that is not decoding",
        lambda _: _policy("slidingserve").observe_decodes(SLIDING_STATE, [WAITING], [0.01]),
        "observe_decodes: decodes[0] is 'a', waiting, not decoding",
    ),
    Case(
        "observe_decodes with a NaN latency",
        lambda _: _policy("vllm").observe_decodes(
            _policy("vllm").init(), [DECODING], [0.01, math.nan]
        ),
        "observe_decodes: latencies[1]=nan must be finite",
    ),
    Case(
        "observe_decodes with latencies as text",
        lambda _: _policy("vllm").observe_decodes(_policy("vllm").init(), [DECODING], "0.01"),
        "observe_decodes: latencies must be a sequence, got str",
    ),
    Case(
        "time_to_budget with target NaN",
        lambda _: time_to_budget(PREDICTOR, [DECODING], [WAITING], math.nan, 100),
        "time_to_budget: target=nan must be finite",
    ),
    Case(
        "time_to_budget with limit -5",
        lambda _: time_to_budget(PREDICTOR, [DECODING], [WAITING], 0.1, -5),
        "time_to_budget: limit=-5 must be >= 0",
    ),
    Case(
        "time_to_budget with a decode in the queue",
        lambda _: time_to_budget(PREDICTOR, [], [DECODING], 0.1, 100),
        "time_to_budget: queue[0] is 'd', decoding, not waiting or prefilling",
    ),
    Case(
        "time_to_budget with a predictor that is not one",
        lambda _: time_to_budget(None, [], [WAITING], 0.1, 100),  # type: ignore[arg-type]
        "time_to_budget: predictor must be a LatencyPredictor, got NoneType",
    ),
    Case(
        "sort_candidates of no state",
        lambda _: sort_candidates(None),  # type: ignore[arg-type]
        "sort_candidates: state must be a SchedulerState, got NoneType",
    ),
    Case(
        "sort_candidates with a dict for config",
        lambda _: sort_candidates(STATE, {}),  # type: ignore[arg-type]
        "sort_candidates: config must be a SlidingConfig, got dict",
    ),
    Case(
        "sliding_chunk with a NaN deadline",
        lambda _: sliding_chunk(FILL, (math.nan,), 10, SlidingConfig()),
        "sliding_chunk: horizon[0]=nan must be finite",
    ),
    Case(
        "sliding_chunk with cap -5",
        lambda _: sliding_chunk(FILL, (0.1,), -5, SlidingConfig()),
        "sliding_chunk: cap=-5 must be >= 0",
    ),
    Case(
        "sliding_chunk without a config",
        lambda _: sliding_chunk(FILL, (0.1,), 10, None),  # type: ignore[arg-type]
        "sliding_chunk: config must be a SlidingConfig, got NoneType",
    ),
    Case(
        "construct_batch with margin 0",
        lambda _: construct_batch(FILL, [], [WAITING], 1.0, None, 10, 0.0),
        "construct_batch: margin=0.0 must be >= 1",
    ),
    Case(
        "construct_batch at a NaN time",
        lambda _: construct_batch(FILL, [], [WAITING], math.nan, None, 10),
        "construct_batch: now=nan must be finite",
    ),
    Case(
        "construct_batch with cap -1",
        lambda _: construct_batch(FILL, [], [WAITING], 1.0, None, -1),
        "construct_batch: cap=-1 must be >= 0",
    ),
    Case(
        "a late share of 0",
        lambda _: SlidingConfig(late_grace=60.0, late_share=0.0),
        "sliding config: late_share=0.0 must be in (0, 1]",
    ),
    Case(
        "a late grace without demotion",
        lambda _: SlidingConfig(demote_late=False, late_grace=60.0),
        "sliding config: late_grace needs demote_late=True",
    ),
    Case(
        "burst shedding in EDF order",
        lambda _: SlidingConfig(order="edf", shed_bursts=True),
        "sliding config: shed_bursts needs demote_late=True and order='mlps'",
    ),
    Case(
        "a negative KV headroom",
        lambda _: SlidingConfig(kv_headroom=-1),
        "sliding config: kv_headroom=-1 must be >= 0",
    ),
    Case(
        "a negative give-up delay",
        lambda _: by_name("slidingserve+", PREDICTOR, give_up_after=-1.0),
        "policy 'slidingserve+': give_up_after=-1.0 must be >= 0",
    ),
    Case(
        "a late share above 1 on slidingserve+",
        lambda _: by_name("slidingserve+", PREDICTOR, late_share=2.0),
        "policy 'slidingserve+': late_share=2.0 must be in (0, 1]",
    ),
    Case(
        "default_predictor of a GPU that is not a name",
        lambda _: default_predictor(3),  # type: ignore[arg-type]
        "default_predictor: gpu must be a name, got 3",
    ),
    Case(
        "default_predictor of tp 'x'",
        lambda _: default_predictor("rtx3090", "qwen2.5-7b", "x"),  # type: ignore[arg-type]
        "default_predictor: tp must be an int, got 'x'",
    ),
    Case(
        "a priced queue without a predictor",
        lambda _: PricedQueue.of(None, [], []),  # type: ignore[arg-type]
        "priced queue: predictor must be a LatencyPredictor, got NoneType",
    ),
    Case(
        "SLO keys on the wire that are no object",
        lambda _: slo_on_wire([1, 2]),
        "request: vllm_xargs=[1, 2] must be a JSON object",
    ),
    Case(
        "protected sent as 2 on the wire",
        lambda _: slo_on_wire({"protected": 2}),
        "vllm_xargs: protected must be a bool, got 2",
    ),
    Case(
        "a policy planning past the engine's budget",
        lambda _: require_budget(by_name("sarathi", PREDICTOR), 64, "engine", "budget", "raise it"),
        "engine: budget=64: policy 'sarathi' plans up to 512 tokens a step, more than the engine",
    ),
    Case(
        "a priced queue of numbers",
        lambda _: PricedQueue.of(PREDICTOR, [], [1, 2]),  # type: ignore[list-item]
        "priced queue: queue[0] must be a Request, got int",
    ),
]


def test_the_table_is_large_and_distinct() -> None:
    assert len(CASES) >= 60
    assert len({c.name for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_input_names_what_is_wrong(case: Case, tmp_path: Path) -> None:
    path = tmp_path / "input"
    if case.content is not None:
        path.write_bytes(case.content)
    with pytest.raises(SlidingPolicyError) as raised:
        case.call(path)
    assert case.needle in str(raised.value)


def test_the_docs_list_every_case() -> None:
    """docs/bad-input.md holds each case with its message (`scripts/bad_input_tables.py`)."""
    rows = documented_rows(Path(__file__).resolve().parents[1] / "docs" / "bad-input.md")
    missing = [c.name for c in CASES if c.needle not in " ".join(rows.get(c.name, "").split())]
    assert missing == [], "run python scripts/bad_input_tables.py"
