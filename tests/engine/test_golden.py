"""Golden runs: every policy, with and without KV pressure, gives exactly the results it gave
before the redesign of issue 13 (one formula in one place). A digest covers each run's
metrics, every request's outcome columns, where the run ended and the engine's figures; a
change to any plan of any policy changes it.

SlidingServe's variants learn their predictor online by default. Each of their cases runs
twice: as the reference configuration without learning (`learn=false`, whose digests are
those recorded before learning became the default, unchanged), and as it runs by default.

Regenerate only for a change that is meant to move results, and say so in its commit:
    .venv/bin/python -m tests.engine.test_golden

An online refit solves small least-squares problems through LAPACK, whose last bits depend on
the CPU kernel OpenBLAS picks (AVX2 and AVX-512 round differently), and one ulp can move a
plan. So the learning cases are pinned per fingerprint of this machine's linear algebra (the
exact coefficients of one fixed refit); on a machine whose fingerprint has none recorded,
they skip and say which fingerprint to record (`OPENBLAS_CORETYPE=Haswell` gives the AVX2
one on an AVX-512 machine).
"""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

from slidingpolicy import by_name, default_predictor
from slidingpolicy.engine.simulator import EngineOptions, simulate
from slidingpolicy.hardware import default_hardware
from slidingpolicy.policies import Online, names
from slidingpolicy.policies.labels import label, parse_label
from slidingpolicy.pricing.fit import Sample, accumulate, solve
from slidingpolicy.workloads import Poisson, make_workload

Case = tuple[str, str, float, int | None, int, float]
"""(policy label, workload, rate, KV capacity in tokens or None, seed, SLO scale)."""

REQUESTS = 120
"""Requests of each case's workload, except the overloaded ones'."""
OVERLOAD_REQUESTS = 800
"""Requests of an overloaded case (rate 12, about 10× capacity): its waiting queue grows to
hundreds, where the incremental queue order (issue "bounded cost under overload") takes over
from sorting."""

EXTRA = (
    "slidingserve[window=3]",
    "slidingserve[split_search=ternary]",
    "slidingserve[latency_margin=1.0]",
    "slidingserve+[refit_every=40]",
    "sarathi-edf+sc[window=1,max_batch_tokens=512]",
)
OVERLOAD_EXTRA = (
    "slidingserve[demote_late=false]",
    "slidingserve[urgent_first=false]",
    "slidingserve[level_order=deadline,demote_late=false]",
    "slidingserve[window=3]",
)
RECORDED: tuple[Case, ...] = (
    *((p, "mixed-v1", 2.5, None, 11, 1.0) for p in (*names(), *EXTRA)),
    *((p, "mixed-v1", 2.0, 30_000, 12, 1.0) for p in (*names(), *EXTRA)),
    *((p, "arxiv", 0.8, None, 13, 1.0) for p in ("slidingserve", "slidingserve+", "qoserve")),
    *((p, "sharegpt", 6.0, None, 14, 1.0) for p in ("slidingserve", "slidingserve+", "qoserve")),
    *((p, "mixed-v1", 2.0, None, 15, 0.3) for p in ("slidingserve", "slidingserve+", "greedy")),
    *((p, "mixed-v1", 12.0, None, 16, 1.0) for p in (*names(), *OVERLOAD_EXTRA)),
    *((p, "mixed-v1", 12.0, 30_000, 17, 1.0) for p in names()),
)


def learns(text: str) -> bool:
    """Whether the policy a label names learns online."""
    name, options = parse_label(text)
    return isinstance(by_name(name, default_predictor(), **dict(options)), Online)


def without_learning(case: Case) -> Case:
    """The case with its policy's online learning turned off (`learn=false`)."""
    name, options = parse_label(case[0])
    return (label(name, (*options, ("learn", False))), *case[1:])


LEARNING = ("slidingserve+[refit_every=40]",)
"""Labels recorded learning online before it was the default (no reference to keep)."""
CASES: tuple[Case, ...] = tuple(
    dict.fromkeys(
        (
            *(
                without_learning(c) if learns(c[0]) and c[0] not in LEARNING else c
                for c in RECORDED
            ),
            *(c for c in RECORDED if learns(c[0])),
        )
    )
)
"""Every recorded case; a learning one also without learning (module docstring)."""

DIGESTS: dict[Case, str] = {
    ("vllm", "mixed-v1", 2.5, None, 11, 1.0): "ba7c810a924df0fd0b99",
    ("sarathi", "mixed-v1", 2.5, None, 11, 1.0): "00bd180320726ec9444c",
    ("sarathi-edf", "mixed-v1", 2.5, None, 11, 1.0): "668412a5bfd5e33406b5",
    ("qoserve", "mixed-v1", 2.5, None, 11, 1.0): "f33d9c675dd4bf92cc5a",
    ("greedy[learn=false]", "mixed-v1", 2.5, None, 11, 1.0): "44c78396b149bd925657",
    ("sarathi-edf+sc[learn=false]", "mixed-v1", 2.5, None, 11, 1.0): "e206d41bd92c967ba21f",
    ("sarathi-edf+sc+mlps[learn=false]", "mixed-v1", 2.5, None, 11, 1.0): "3f254c20f721344caa18",
    ("slidingserve[learn=false]", "mixed-v1", 2.5, None, 11, 1.0): "70dae1951f41ce00334b",
    ("slidingserve+[learn=false]", "mixed-v1", 2.5, None, 11, 1.0): "40888fd63db253205a39",
    ("slidingserve[window=3,learn=false]", "mixed-v1", 2.5, None, 11, 1.0): "f7bd98a49ffd84e289cc",
    (
        "slidingserve[split_search=ternary,learn=false]",
        "mixed-v1",
        2.5,
        None,
        11,
        1.0,
    ): "cce28706eadd8a1b2d67",
    (
        "slidingserve[latency_margin=1.0,learn=false]",
        "mixed-v1",
        2.5,
        None,
        11,
        1.0,
    ): "257a4567317cb9d8c9db",
    (
        "sarathi-edf+sc[window=1,max_batch_tokens=512,learn=false]",
        "mixed-v1",
        2.5,
        None,
        11,
        1.0,
    ): "eec185d5c87d1bf6e100",
    ("vllm", "mixed-v1", 2.0, 30000, 12, 1.0): "bd007eb84d6fb50a2ff0",
    ("sarathi", "mixed-v1", 2.0, 30000, 12, 1.0): "650e1d8a9d9d45786cc5",
    ("sarathi-edf", "mixed-v1", 2.0, 30000, 12, 1.0): "19e6e10a8eef6518cec0",
    ("qoserve", "mixed-v1", 2.0, 30000, 12, 1.0): "c46b785b54d5549fb17f",
    ("greedy[learn=false]", "mixed-v1", 2.0, 30000, 12, 1.0): "53648b437b34f9260819",
    ("sarathi-edf+sc[learn=false]", "mixed-v1", 2.0, 30000, 12, 1.0): "8389cbc8143a899c6b59",
    ("sarathi-edf+sc+mlps[learn=false]", "mixed-v1", 2.0, 30000, 12, 1.0): "985a1d08043aea5b7c6d",
    ("slidingserve[learn=false]", "mixed-v1", 2.0, 30000, 12, 1.0): "985a1d08043aea5b7c6d",
    ("slidingserve+[learn=false]", "mixed-v1", 2.0, 30000, 12, 1.0): "fdf6866897cb59d31ea0",
    ("slidingserve[window=3,learn=false]", "mixed-v1", 2.0, 30000, 12, 1.0): "7cc9b9ba54cbea5fe7f5",
    (
        "slidingserve[split_search=ternary,learn=false]",
        "mixed-v1",
        2.0,
        30000,
        12,
        1.0,
    ): "985a1d08043aea5b7c6d",
    (
        "slidingserve[latency_margin=1.0,learn=false]",
        "mixed-v1",
        2.0,
        30000,
        12,
        1.0,
    ): "5d3616a45a4787fabfa0",
    (
        "sarathi-edf+sc[window=1,max_batch_tokens=512,learn=false]",
        "mixed-v1",
        2.0,
        30000,
        12,
        1.0,
    ): "791f90f872b805f6aaf2",
    ("slidingserve[learn=false]", "arxiv", 0.8, None, 13, 1.0): "f243c0f2a32269d66f6c",
    ("slidingserve+[learn=false]", "arxiv", 0.8, None, 13, 1.0): "b4b8fc98aa494d3630cb",
    ("qoserve", "arxiv", 0.8, None, 13, 1.0): "bb3704a03601db3d7c05",
    ("slidingserve[learn=false]", "sharegpt", 6.0, None, 14, 1.0): "412c156d36ce8871e243",
    ("slidingserve+[learn=false]", "sharegpt", 6.0, None, 14, 1.0): "62157cac64798008b140",
    ("qoserve", "sharegpt", 6.0, None, 14, 1.0): "eafa0ffa355198ad26af",
    ("slidingserve[learn=false]", "mixed-v1", 2.0, None, 15, 0.3): "ef7287a204921643e5b5",
    ("slidingserve+[learn=false]", "mixed-v1", 2.0, None, 15, 0.3): "f946353cc7da0346b843",
    ("greedy[learn=false]", "mixed-v1", 2.0, None, 15, 0.3): "e39dd7648b67afc581f3",
    ("vllm", "mixed-v1", 12.0, None, 16, 1.0): "db4e145d0b6d22371d83",
    ("sarathi", "mixed-v1", 12.0, None, 16, 1.0): "fcf5d91fd01dcf82766e",
    ("sarathi-edf", "mixed-v1", 12.0, None, 16, 1.0): "5bf5cbf6b6a262c4bea3",
    ("qoserve", "mixed-v1", 12.0, None, 16, 1.0): "5613dfa28d336d0442f4",
    ("greedy[learn=false]", "mixed-v1", 12.0, None, 16, 1.0): "1be5f196d4b42259ae32",
    ("sarathi-edf+sc[learn=false]", "mixed-v1", 12.0, None, 16, 1.0): "f73ae9441b419994ec59",
    ("sarathi-edf+sc+mlps[learn=false]", "mixed-v1", 12.0, None, 16, 1.0): "904845cd3e59bf9b4056",
    ("slidingserve[learn=false]", "mixed-v1", 12.0, None, 16, 1.0): "2ef04f1e10e2ef8c868c",
    ("slidingserve+[learn=false]", "mixed-v1", 12.0, None, 16, 1.0): "4182ee534c86d8e9fa92",
    (
        "slidingserve[demote_late=false,learn=false]",
        "mixed-v1",
        12.0,
        None,
        16,
        1.0,
    ): "89d64df55e4bc65d243f",
    (
        "slidingserve[urgent_first=false,learn=false]",
        "mixed-v1",
        12.0,
        None,
        16,
        1.0,
    ): "a66da27c5a98416669b1",
    (
        "slidingserve[level_order=deadline,demote_late=false,learn=false]",
        "mixed-v1",
        12.0,
        None,
        16,
        1.0,
    ): "d0fbba74c4d8745bfd99",
    ("slidingserve[window=3,learn=false]", "mixed-v1", 12.0, None, 16, 1.0): "774ad363801b964b3f97",
    ("vllm", "mixed-v1", 12.0, 30000, 17, 1.0): "2110bda7aa12f5f50425",
    ("sarathi", "mixed-v1", 12.0, 30000, 17, 1.0): "629c792a47763204ede3",
    ("sarathi-edf", "mixed-v1", 12.0, 30000, 17, 1.0): "f4a98f5141e1625469bd",
    ("qoserve", "mixed-v1", 12.0, 30000, 17, 1.0): "7374740483804926d258",
    ("greedy[learn=false]", "mixed-v1", 12.0, 30000, 17, 1.0): "15e3ca7fea4594141a70",
    ("sarathi-edf+sc[learn=false]", "mixed-v1", 12.0, 30000, 17, 1.0): "799bd37b652ae0c404fd",
    ("sarathi-edf+sc+mlps[learn=false]", "mixed-v1", 12.0, 30000, 17, 1.0): "d5fe55bd7c572b441ffc",
    ("slidingserve[learn=false]", "mixed-v1", 12.0, 30000, 17, 1.0): "6cac29b640dd4d20ac88",
    ("slidingserve+[learn=false]", "mixed-v1", 12.0, 30000, 17, 1.0): "ef8691eb49a4bb7f01ff",
}


def linear_algebra_fingerprint() -> str:
    """sha256 of the exact coefficients one fixed online refit gives on this machine."""
    rng = np.random.default_rng(0)
    prior = default_predictor()
    samples = []
    for _ in range(300):
        width = int(rng.integers(1, 9))
        chunks = [1 if rng.random() < 0.7 else int(rng.integers(1, 600)) for _ in range(width)]
        contexts = [int(rng.integers(0, 4000)) for _ in range(width)]
        sample = Sample(chunks, contexts, 0.0)
        x, scenario = sample.features()
        latency = 1.3 * prior.predict_features(x, scenario) + float(rng.normal(0.0, 1e-3))
        samples.append(Sample(chunks, contexts, max(latency, 0.0)))
    fitted = solve(accumulate(samples), prior=prior, prior_weight=200.0)
    return hashlib.sha256(fitted.coefficients.tobytes()).hexdigest()[:20]


GOLDEN_METRICS = (
    "requests",
    "completed",
    "attainment",
    "ttft_attainment",
    "tbt_attainment",
    "ttft_p50",
    "ttft_p90",
    "ttft_p99",
    "tbt_p50",
    "tbt_p90",
    "tbt_p99",
    "output_tokens",
    "span",
    "token_throughput",
    "request_throughput",
    "iterations",
    "preemptions",
    "predictor_mae",
    "predictor_bias",
)
"""The metrics the digests were recorded with. Statistics added since (means, std, TPOT, E2E,
goodput) are functions of the outcome columns and token gaps the run already fixes, so they
are left out rather than the digests regenerated: an unchanged digest shows no plan moved."""


GOLDEN_OUTCOME = (
    "generated",
    "ttft",
    "max_gap",
    "max_lateness",
    "finish",
    "preemptions",
    "completed",
    "attained",
    "ttft_attained",
    "tbt_attained",
)
"""The outcome columns the digests were recorded with, in order. A column added since
(`given_up`: no golden run gives a request up, and `digest` checks that its column is all
NaN) is left out for the same reason as the metrics above."""


def requests(case: Case) -> int:
    """The requests of the case's workload: more for the overloaded ones (rate above 10)."""
    return OVERLOAD_REQUESTS if case[2] > 10.0 else REQUESTS


def digest(case: Case) -> str:
    """sha256 of everything the run reports (module docstring)."""
    text, workload, rate, kv, seed, slo_scale = case
    name, options = parse_label(text)
    policy = by_name(name, default_predictor(), **dict(options))
    run = simulate(
        policy,
        make_workload(workload, requests(case), Poisson(rate), seed, slo_scale),
        default_hardware(),
        seed,
        EngineOptions(kv_capacity_tokens=kv),
    )
    assert np.isnan(run.outcome.given_up).all()
    metrics = run.metrics.to_dict()
    document = {
        "metrics": {k: metrics[k] for k in GOLDEN_METRICS},
        "end": run.end,
        "stalled": run.stalled,
        "stopped_early": run.stopped_early,
        "kv_blocks_in_use": run.kv_blocks_in_use,
        "decisions": run.stats.decisions,
        "decode_runs": run.stats.decode_runs,
        "run_iterations": run.stats.run_iterations,
    }
    hasher = hashlib.sha256(json.dumps(document, sort_keys=True).encode())
    for field in GOLDEN_OUTCOME:
        hasher.update(np.ascontiguousarray(getattr(run.outcome, field)).tobytes())
    return hasher.hexdigest()[:20]


REFIT_DIGESTS: dict[str, dict[Case, str]] = {
    "f9dcd0b5954c453c73e9": {
        ("slidingserve+[refit_every=40]", "mixed-v1", 2.5, None, 11, 1.0): "d2ebdacc33781bc9587f",
        ("slidingserve+[refit_every=40]", "mixed-v1", 2.0, 30000, 12, 1.0): "2e12de8b57d6211ccdb1",
        ("greedy", "mixed-v1", 2.5, None, 11, 1.0): "47c956185ea7cbfdf9f9",
        ("sarathi-edf+sc", "mixed-v1", 2.5, None, 11, 1.0): "ddc1a341177262762b83",
        ("sarathi-edf+sc+mlps", "mixed-v1", 2.5, None, 11, 1.0): "981ced1b624df22f02fe",
        ("slidingserve", "mixed-v1", 2.5, None, 11, 1.0): "e24b27939f861af84e95",
        ("slidingserve+", "mixed-v1", 2.5, None, 11, 1.0): "5bcf3c1b0e5a9aa8d350",
        ("slidingserve[window=3]", "mixed-v1", 2.5, None, 11, 1.0): "cd25c9c088543d3fd3cd",
        (
            "slidingserve[split_search=ternary]",
            "mixed-v1",
            2.5,
            None,
            11,
            1.0,
        ): "f07af0199729d6c4c5e0",
        (
            "slidingserve[latency_margin=1.0]",
            "mixed-v1",
            2.5,
            None,
            11,
            1.0,
        ): "1ae5c617117b2b2c280b",
        (
            "sarathi-edf+sc[window=1,max_batch_tokens=512]",
            "mixed-v1",
            2.5,
            None,
            11,
            1.0,
        ): "5f49ddf3b4f72227ebc1",
        ("greedy", "mixed-v1", 2.0, 30000, 12, 1.0): "b4916b5dc9cf4d103073",
        ("sarathi-edf+sc", "mixed-v1", 2.0, 30000, 12, 1.0): "642a8e586735fb255c6d",
        ("sarathi-edf+sc+mlps", "mixed-v1", 2.0, 30000, 12, 1.0): "d469fba616852bf43246",
        ("slidingserve", "mixed-v1", 2.0, 30000, 12, 1.0): "2d67b07421f280d2b5af",
        ("slidingserve+", "mixed-v1", 2.0, 30000, 12, 1.0): "96160017131cf4514657",
        ("slidingserve[window=3]", "mixed-v1", 2.0, 30000, 12, 1.0): "612e39eb71340b787c69",
        (
            "slidingserve[split_search=ternary]",
            "mixed-v1",
            2.0,
            30000,
            12,
            1.0,
        ): "2d67b07421f280d2b5af",
        (
            "slidingserve[latency_margin=1.0]",
            "mixed-v1",
            2.0,
            30000,
            12,
            1.0,
        ): "6b2557cd8683c636d677",
        (
            "sarathi-edf+sc[window=1,max_batch_tokens=512]",
            "mixed-v1",
            2.0,
            30000,
            12,
            1.0,
        ): "2fba66771d94cd8e57fa",
        ("slidingserve", "arxiv", 0.8, None, 13, 1.0): "000f5e5a3558fe912891",
        ("slidingserve+", "arxiv", 0.8, None, 13, 1.0): "2246078320f1134a6a05",
        ("slidingserve", "sharegpt", 6.0, None, 14, 1.0): "8413f7c3221be37074f4",
        ("slidingserve+", "sharegpt", 6.0, None, 14, 1.0): "4a240bc96ac1400a08ba",
        ("slidingserve", "mixed-v1", 2.0, None, 15, 0.3): "2a75cc89754dcdc4a1c4",
        ("slidingserve+", "mixed-v1", 2.0, None, 15, 0.3): "c9ed6706668fbe9c1fbc",
        ("greedy", "mixed-v1", 2.0, None, 15, 0.3): "6da28bdc93ab7af5de35",
        ("greedy", "mixed-v1", 12.0, None, 16, 1.0): "d656ad023659739b0cfd",
        ("sarathi-edf+sc", "mixed-v1", 12.0, None, 16, 1.0): "16a0711298de2365b920",
        ("sarathi-edf+sc+mlps", "mixed-v1", 12.0, None, 16, 1.0): "b5d05276bd1c61c320fc",
        ("slidingserve", "mixed-v1", 12.0, None, 16, 1.0): "fa868244e0dcdb578384",
        ("slidingserve+", "mixed-v1", 12.0, None, 16, 1.0): "af5a85da9610bcd23576",
        (
            "slidingserve[demote_late=false]",
            "mixed-v1",
            12.0,
            None,
            16,
            1.0,
        ): "1ef24f89f1de52e8f848",
        (
            "slidingserve[urgent_first=false]",
            "mixed-v1",
            12.0,
            None,
            16,
            1.0,
        ): "7a5268ff3a9367ddfd97",
        (
            "slidingserve[level_order=deadline,demote_late=false]",
            "mixed-v1",
            12.0,
            None,
            16,
            1.0,
        ): "99d35f1660a681de9846",
        ("slidingserve[window=3]", "mixed-v1", 12.0, None, 16, 1.0): "3fb2708d7041276ee48f",
        ("greedy", "mixed-v1", 12.0, 30000, 17, 1.0): "8fc29a59334a4aa545b2",
        ("sarathi-edf+sc", "mixed-v1", 12.0, 30000, 17, 1.0): "46233ec5054da90ba743",
        ("sarathi-edf+sc+mlps", "mixed-v1", 12.0, 30000, 17, 1.0): "04020032030d1f9418c5",
        ("slidingserve", "mixed-v1", 12.0, 30000, 17, 1.0): "b6639424ba9fc960c567",
        ("slidingserve+", "mixed-v1", 12.0, 30000, 17, 1.0): "04986cc97641e9e2ab18",
    },
    "2873a27655b617feef01": {
        ("slidingserve+[refit_every=40]", "mixed-v1", 2.5, None, 11, 1.0): "b3742b52e281f4fa8723",
        ("slidingserve+[refit_every=40]", "mixed-v1", 2.0, 30000, 12, 1.0): "05d07332df01a814dbda",
        ("greedy", "mixed-v1", 2.5, None, 11, 1.0): "a10b08b446f1e9f18d6a",
        ("sarathi-edf+sc", "mixed-v1", 2.5, None, 11, 1.0): "0346ccd14ff760c9cf15",
        ("sarathi-edf+sc+mlps", "mixed-v1", 2.5, None, 11, 1.0): "ab53978427f32b1a8043",
        ("slidingserve", "mixed-v1", 2.5, None, 11, 1.0): "89e1dc69a5542ff0bb0d",
        ("slidingserve+", "mixed-v1", 2.5, None, 11, 1.0): "fba2ec231d76f96984f2",
        ("slidingserve[window=3]", "mixed-v1", 2.5, None, 11, 1.0): "0f529d6a180bcaf7ff32",
        (
            "slidingserve[split_search=ternary]",
            "mixed-v1",
            2.5,
            None,
            11,
            1.0,
        ): "5b6208c03b9e02e71341",
        (
            "slidingserve[latency_margin=1.0]",
            "mixed-v1",
            2.5,
            None,
            11,
            1.0,
        ): "5a44b94c337def8bc572",
        (
            "sarathi-edf+sc[window=1,max_batch_tokens=512]",
            "mixed-v1",
            2.5,
            None,
            11,
            1.0,
        ): "c409e32758ed83b85c5e",
        ("greedy", "mixed-v1", 2.0, 30000, 12, 1.0): "3138c6a405fdc69def8a",
        ("sarathi-edf+sc", "mixed-v1", 2.0, 30000, 12, 1.0): "bbb129dcb0771cbfbf35",
        ("sarathi-edf+sc+mlps", "mixed-v1", 2.0, 30000, 12, 1.0): "d3277e9a7bd7028eae26",
        ("slidingserve", "mixed-v1", 2.0, 30000, 12, 1.0): "55b1f22f7f59827e3398",
        ("slidingserve+", "mixed-v1", 2.0, 30000, 12, 1.0): "358541c99e70584c79f2",
        ("slidingserve[window=3]", "mixed-v1", 2.0, 30000, 12, 1.0): "e94db3a3c7b0fde085ab",
        (
            "slidingserve[split_search=ternary]",
            "mixed-v1",
            2.0,
            30000,
            12,
            1.0,
        ): "55b1f22f7f59827e3398",
        (
            "slidingserve[latency_margin=1.0]",
            "mixed-v1",
            2.0,
            30000,
            12,
            1.0,
        ): "dcd831725222fb859a48",
        (
            "sarathi-edf+sc[window=1,max_batch_tokens=512]",
            "mixed-v1",
            2.0,
            30000,
            12,
            1.0,
        ): "26c5df1eec8fa28c433d",
        ("slidingserve", "arxiv", 0.8, None, 13, 1.0): "9374a7b66e4229584bb7",
        ("slidingserve+", "arxiv", 0.8, None, 13, 1.0): "5355144c9228c53c666e",
        ("slidingserve", "sharegpt", 6.0, None, 14, 1.0): "ff10cfaa7e9c05391090",
        ("slidingserve+", "sharegpt", 6.0, None, 14, 1.0): "b64006b831b60c3a5918",
        ("slidingserve", "mixed-v1", 2.0, None, 15, 0.3): "348aae2e0948cf8bd0be",
        ("slidingserve+", "mixed-v1", 2.0, None, 15, 0.3): "b0cc7bdd1f4f96152f4a",
        ("greedy", "mixed-v1", 2.0, None, 15, 0.3): "014de7aadc9cef3fc209",
        ("greedy", "mixed-v1", 12.0, None, 16, 1.0): "7240212d60e120040eca",
        ("sarathi-edf+sc", "mixed-v1", 12.0, None, 16, 1.0): "eaf515c659ca1f8e2b38",
        ("sarathi-edf+sc+mlps", "mixed-v1", 12.0, None, 16, 1.0): "38add59631f096e8d571",
        ("slidingserve", "mixed-v1", 12.0, None, 16, 1.0): "ac23854310b0a7482f00",
        ("slidingserve+", "mixed-v1", 12.0, None, 16, 1.0): "f831052e5f1d7e9132f4",
        (
            "slidingserve[demote_late=false]",
            "mixed-v1",
            12.0,
            None,
            16,
            1.0,
        ): "247e3d154ffb9a3c546e",
        (
            "slidingserve[urgent_first=false]",
            "mixed-v1",
            12.0,
            None,
            16,
            1.0,
        ): "5fd7c4d9e76653fcf04e",
        (
            "slidingserve[level_order=deadline,demote_late=false]",
            "mixed-v1",
            12.0,
            None,
            16,
            1.0,
        ): "81a86abc5b1c8a7ff775",
        ("slidingserve[window=3]", "mixed-v1", 12.0, None, 16, 1.0): "d5280478dca3b220c48a",
        ("greedy", "mixed-v1", 12.0, 30000, 17, 1.0): "af68c62233121c4c1e46",
        ("sarathi-edf+sc", "mixed-v1", 12.0, 30000, 17, 1.0): "1eabbaec251b12907d38",
        ("sarathi-edf+sc+mlps", "mixed-v1", 12.0, 30000, 17, 1.0): "9bd5a5b8d71ac4587ebc",
        ("slidingserve", "mixed-v1", 12.0, 30000, 17, 1.0): "4cfae1387946cbd2e5c0",
        ("slidingserve+", "mixed-v1", 12.0, 30000, 17, 1.0): "41d3dc4020d77ed4e347",
    },
}
"""Digests of the cases that refit online, per `linear_algebra_fingerprint` (module docstring)."""


def refits(case: Case) -> bool:
    return learns(case[0])


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-{c[1]}")
def test_a_golden_run_gives_what_it_gave(case: Case) -> None:
    if refits(case):
        fingerprint = linear_algebra_fingerprint()
        if fingerprint not in REFIT_DIGESTS:
            pytest.skip(f"no refit digests recorded for linear-algebra fingerprint {fingerprint}")
        assert digest(case) == REFIT_DIGESTS[fingerprint][case]
    else:
        assert digest(case) == DIGESTS[case]


if __name__ == "__main__":
    print("DIGESTS (no online learning):")
    for case in CASES:
        if not refits(case):
            print(f"    {case!r}: {digest(case)!r},")
    print(f"REFIT_DIGESTS[{linear_algebra_fingerprint()!r}] (learning online):")
    for case in CASES:
        if refits(case):
            print(f"    {case!r}: {digest(case)!r},")
