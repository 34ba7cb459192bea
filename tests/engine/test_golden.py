"""Golden runs: every policy, with and without KV pressure, gives exactly the results it gave
before the redesign of issue 13 (one formula in one place). A digest covers each run's
metrics, every request's outcome columns, where the run ended and the engine's figures; a
change to any plan of any policy changes it.

SlidingServe's variants learn their predictor online by default. Each of their cases runs
twice: as the reference configuration without learning (`learn=false`, whose digests are
those recorded before learning became the default, unchanged), and as it runs by default.

The digests live in `golden_digests.json`. Rewrite it only for a change that is meant to
move results, and say so in its commit:
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
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from slidingpolicy import by_name, default_predictor
from slidingpolicy.engine.run_types import EngineOptions
from slidingpolicy.engine.simulator import simulate
from slidingpolicy.hardware import default_hardware
from slidingpolicy.policies import Online, names
from slidingpolicy.policies.labels import label, parse_label
from slidingpolicy.pricing.fit import solve
from slidingpolicy.pricing.samples import Sample, accumulate
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

GOLDEN = Path(__file__).resolve().with_name("golden_digests.json")
"""The recorded digests: `digests` of the cases without online learning, `refit_digests` of
the learning ones per `linear_algebra_fingerprint` (module docstring)."""


def _case(entry: list[Any]) -> Case:
    text, workload, rate, kv, seed, slo_scale = entry
    kv_tokens = None if kv is None else int(kv)
    return (str(text), str(workload), float(rate), kv_tokens, int(seed), float(slo_scale))


def _digests(entries: list[dict[str, Any]]) -> dict[Case, str]:
    return {_case(e["case"]): str(e["digest"]) for e in entries}


def read_golden(path: Path = GOLDEN) -> tuple[dict[Case, str], dict[str, dict[Case, str]]]:
    """The digests without learning, and the refit digests per fingerprint, of a golden file."""
    data = json.loads(path.read_text())
    refit = {k: _digests(v) for k, v in data["refit_digests"].items()}
    return _digests(data["digests"]), refit


def render_golden(digests: dict[Case, str], refit: dict[str, dict[Case, str]]) -> str:
    """The text of a golden file (`read_golden` reads it), one case a line."""

    def entries(found: dict[Case, str], indent: str) -> str:
        return ",\n".join(
            f'{indent}{{"case": {json.dumps(list(c))}, "digest": {json.dumps(d)}}}'
            for c, d in found.items()
        )

    about = json.dumps(ABOUT, indent=2).replace("\n", "\n ")
    fingerprints = ",\n".join(
        f"  {json.dumps(k)}: [\n{entries(v, '   ')}\n  ]" for k, v in refit.items()
    )
    return (
        f'{{\n "about": {about},\n "digests": [\n{entries(digests, "  ")}\n ],\n'
        f' "refit_digests": {{\n{fingerprints}\n }}\n}}\n'
    )


ABOUT = [
    "Golden-run digests of tests/engine/test_golden.py (its docstring says what they cover).",
    "Rewritten by `.venv/bin/python -m tests.engine.test_golden`, only for a change meant to",
    "move results.",
]

DIGESTS, REFIT_DIGESTS = read_golden()


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


def refits(case: Case) -> bool:
    return learns(case[0])


def test_the_digest_file_reads_back_as_written() -> None:
    """No case recorded twice (a duplicate would be dropped on reading), nothing unread."""
    assert render_golden(DIGESTS, REFIT_DIGESTS) == GOLDEN.read_text()


def _marked(case: Case) -> Any:
    """The case, marked `slow` when it is an overloaded one (it runs the most requests)."""
    return pytest.param(case, marks=pytest.mark.slow) if case[2] > 10.0 else case


@pytest.mark.parametrize("case", [_marked(c) for c in CASES], ids=lambda c: f"{c[0]}-{c[1]}")
def test_a_golden_run_gives_what_it_gave(case: Case) -> None:
    if refits(case):
        fingerprint = linear_algebra_fingerprint()
        if fingerprint not in REFIT_DIGESTS:
            pytest.skip(f"no refit digests recorded for linear-algebra fingerprint {fingerprint}")
        assert digest(case) == REFIT_DIGESTS[fingerprint][case]
    else:
        assert digest(case) == DIGESTS[case]


if __name__ == "__main__":
    fingerprint = linear_algebra_fingerprint()
    recorded = {c: digest(c) for c in CASES if not refits(c)}
    learned = {**REFIT_DIGESTS, fingerprint: {c: digest(c) for c in CASES if refits(c)}}
    GOLDEN.write_text(render_golden(recorded, learned))
    print(f"wrote {GOLDEN} (refit digests of fingerprint {fingerprint})")
