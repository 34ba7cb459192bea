"""Regenerate proofs/README.md: run every oracle test, then the clairvoyant gap table.

.venv/bin/python -m proofs.report
"""

from __future__ import annotations

import tempfile
import time
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import attrs
import pytest

from proofs.clairvoyant import Instance, served, solve
from proofs.instances import B0, B1, INSTANCES
from proofs.stepping import run
from proofs.test_bound import as_workload
from slidingpolicy.bound.cost import linear_cost
from slidingpolicy.bound.trace import trace_bound
from slidingpolicy.policies import Online, by_name, names

HERE = Path(__file__).parent


@attrs.frozen(slots=True)
class Claim:
    """One row of the claim table: the test that checks it, and how."""

    test: str
    claim: str
    oracle: str
    cases: str


def claims() -> tuple[Claim, ...]:
    """The claim table's rows (imports the test modules: call after pytest ran)."""
    from proofs import (
        test_bound,
        test_budget,
        test_constructor,
        test_fit,
        test_knapsack,
        test_split,
    )

    return (
        Claim(
            "test_knapsack_matches_lexicographic_milp",
            "`knapsack` is the lexicographic (count, Σv, Σw) optimum",
            "3 sequential HiGHS MILPs (cvxpy)",
            f"{test_knapsack.MILP_CASES} + 2 explicit; ≤ 14 items, C ≤ 4096",
        ),
        Claim(
            "test_knapsack_matches_exhaustive_enumeration",
            "the same",
            "all 2ⁿ subsets",
            f"{test_knapsack.EXHAUSTIVE_CASES}",
        ),
        Claim(
            "test_constructor_is_lexicographically_optimal_by_enumeration",
            "`construct_batch` (no repair) is eq. 21-optimal over feasible (anchor, subset); "
            "plan T̂ ≤ T_a always",
            "all anchors × all subsets",
            f"{test_constructor.EXHAUSTIVE_CASES}; ≤ 7 queued requests",
        ),
        Claim(
            "test_constructor_is_lexicographically_optimal_by_milp",
            "the same",
            "lexicographic MILP (anchor choice z, subsets x)",
            f"{test_constructor.MILP_CASES}; ≤ 6 queued requests",
        ),
        Claim(
            "test_fill_budget_equals_linear_scan_of_price",
            "`fill_budget` = largest b ≤ limit with T̂(b) ≤ target",
            "linear scan of `PricedQueue.price(0, b)` (exact)",
            f"{test_budget.PRICE_CASES}",
        ),
        Claim(
            "test_fill_budget_equals_scan_of_explicit_batches",
            "the same",
            "scan building each greedy batch, `LatencyPredictor.predict` (±1e-12 s)",
            f"{test_budget.EXPLICIT_CASES}",
        ),
        Claim(
            "test_time_to_budget_on_requests_equals_scan",
            "`time_to_budget` on Requests = the scan",
            "linear scan",
            "50",
        ),
        Claim(
            "test_plain_bisection_is_wrong_regression",
            "plain bisection over b is wrong (T̂ not monotone in b)",
            "hypothesis-found minimal case",
            "1",
        ),
        Claim(
            "test_exact_split_equals_exhaustive_scan",
            "`exact_split` minimizes T̂₁(b) + T̂₂(B_Σ − b) s.t. T̂₁(b) ≤ T_cur",
            "exhaustive scan of b (±1e-12 s)",
            f"{test_split.EXACT_CASES}",
        ),
        Claim(
            "test_ternary_split_is_exact_when_one_request_holds_the_window",
            "`ternary_split` is exact when one request holds the window, chunks ≥ 2",
            "exhaustive scan; convexity of the scanned cost",
            f"{test_split.CONVEX_CASES}",
        ),
        Claim(
            "test_ternary_misses_on_a_plateau_across_scenarios_regression",
            "`ternary_split` is not exact in general (counterexample 1)",
            "hypothesis-found minimal case",
            "1",
        ),
        Claim(
            "test_ternary_misses_one_token_chunks_under_one_linear_model_regression",
            "`ternary_split` is not exact in general (counterexample 2)",
            "hypothesis-found minimal case",
            "1",
        ),
        Claim(
            "test_fit_matches_cvxpy_bounded_least_squares",
            "`fit_predictor` is the bounded least-squares optimum per scenario in the monotone "
            "order (DECODE ≤ MIXED ≥ PREFILL), and w ≥ 0 for the global model",
            "cvxpy least squares under the same bounds; RSS ≤ opt + 1e-7·Σy²",
            f"{test_fit.FIT_CASES} sample sets of 10–80 + 1 explicit",
        ),
        Claim(
            "test_online_refit_matches_cvxpy_penalized_least_squares",
            "the online refit is the optimum of least squares plus the ridge toward the "
            "scaled prior, under the same bounds",
            "cvxpy penalized least squares; objective ≤ opt + 1e-7·(Σy² + opt)",
            f"{test_fit.FIT_CASES} (samples, prior) pairs × N0 ∈ {{1, 200, 5000}} + 1 explicit",
        ),
        Claim(
            "test_online_refit_is_optimal_at_latencies_of_1e_49",
            "the same at latencies of 1e-49 s",
            "cvxpy penalized least squares; the same bound",
            "1 hypothesis-found",
        ),
        Claim(
            "test_the_fit_is_scale_free",
            "latencies × 2^k give every coefficient × 2^k, bit for bit (no absolute tolerance)",
            "the fit of the unscaled latencies",
            f"{test_fit.FIT_CASES} sample sets × k ∈ [−150, 16] + 1 explicit",
        ),
        Claim(
            "test_clairvoyant_bounds_every_policy",
            "the clairvoyant MILP bounds every policy; each run is a feasible MILP point",
            "MILP (HiGHS) + schedule replay",
            f"{len(INSTANCES)} fixed instances × {len(names())} policies",
        ),
        Claim(
            "test_clairvoyant_bounds_every_policy_on_random_instances",
            "the same",
            "MILP (HiGHS) + schedule replay",
            f"6 random 3-request instances × {len(names())} policies",
        ),
        Claim(
            "test_the_clairvoyant_optimum_is_within_the_trace_bound",
            "the trace bound (`bound.trace`, [bound.md](bound.md)) is at least the most "
            "requests any schedule serves on time",
            "the clairvoyant MILP (HiGHS)",
            f"{len(INSTANCES)} fixed instances",
        ),
        Claim(
            "test_the_clairvoyant_optimum_is_within_the_trace_bound_on_random_instances",
            "the same",
            "the clairvoyant MILP (HiGHS)",
            f"{test_bound.RANDOM_CASES} random 3-request instances",
        ),
    )


def _results() -> tuple[dict[str, str], float]:
    """Outcome of every test in proofs/ (by function name) and the wall time of the run."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "junit.xml"
        start = time.perf_counter()
        pytest.main([str(HERE), "-q", "-p", "no:cacheprovider", f"--junitxml={report}"])
        elapsed = time.perf_counter() - start
        outcomes: dict[str, str] = {}
        for case in ElementTree.parse(report).getroot().iter("testcase"):
            name = case.attrib["name"].split("[")[0]
            failed = case.find("failure") is not None or case.find("error") is not None
            skipped = case.find("skipped") is not None
            outcome = "fail" if failed else "xfail/skip" if skipped else "pass"
            if outcomes.get(name, "pass") == "pass":
                outcomes[name] = outcome
    return outcomes, elapsed


def _gaps(instance: Instance) -> tuple[int, dict[str, int]]:
    optimum, _ = solve(instance)
    counts = {"trace bound": trace_bound(as_workload(instance), linear_cost(B0, B1)).served}
    for name in names():
        ran = run(by_name(name, instance.predictor()), instance)
        counts[name] = len(served(instance, ran))
    return optimum, counts


def _unlearned(instance: Instance, counts: dict[str, int]) -> list[str]:
    """'policy n' for each policy that learns online by default and serves n ≠ its count
    with `learn=false` (its predictor, exact here, kept as given)."""
    moved = []
    for name in names():
        if isinstance(by_name(name, instance.predictor()), Online):
            ran = run(by_name(name, instance.predictor(), learn=False), instance)
            if (n := len(served(instance, ran))) != counts[name]:
                moved.append(f"{name} {n}")
    return moved


def _cell(count: int, optimum: int) -> str:
    gap = optimum - count
    return f"{count} ({'−' + str(gap) if gap else '0'})"


def render() -> str:
    """The README text."""
    outcomes, elapsed = _results()
    lines = [
        "# proofs/ — oracles and written proofs",
        "",
        "Generated by `.venv/bin/python -m proofs.report` (do not edit by hand). Each oracle is",
        "an importable module (`*_oracle.py`, `clairvoyant.py`); each claim is a pytest test",
        "with its number of generated cases in `settings(max_examples=…)` and its docstring.",
        f"Run: `.venv/bin/python -m pytest proofs -q` — {elapsed:.0f} s here (2 CPU cores).",
        "",
        "Written proofs: [monotonicity.md](monotonicity.md) (T̂ in the chunk; TimeToBudget),",
        "[split.md](split.md) (ternary and exact split),",
        "[knapsack.md](knapsack.md) (the DP), [constructor.md](constructor.md)",
        "(verify-and-repair), [bound.md](bound.md) (the upper bound on capacity).",
        "",
        "## Claims",
        "",
        "| claim | oracle | cases checked | result |",
        "|---|---|---|---|",
    ]
    rows = claims()
    for c in rows:
        result = outcomes.get(c.test, "not run")
        lines.append(f"| {c.claim} | {c.oracle} | {c.cases} | {result} (`{c.test}`) |")
    extra = sorted(set(outcomes) - {c.test for c in rows})
    for name in extra:
        lines.append(f"| (unlisted) | | | {outcomes[name]} (`{name}`) |")
    policies = names()
    lines += [
        "",
        "## Clairvoyant gap",
        "",
        f"Linear latency T = {B0} s + {B1} s/token per non-empty iteration, used as ground",
        "truth and as every policy's predictor; the MILP knows all arrivals and output lengths",
        "and may drop requests; K iterations at most. Cells: requests meeting every eq. 1",
        "deadline (gap to the MILP's optimum in brackets).",
        "",
        "| instance | requests | K | MILP | trace bound | " + " | ".join(policies) + " |",
        "|---|---|---|---|---|" + "---|" * len(policies),
    ]
    unlearned = []
    for instance in INSTANCES:
        optimum, counts = _gaps(instance)
        cells = [str(counts["trace bound"])] + [_cell(counts[p], optimum) for p in policies]
        lines.append(
            f"| {instance.name} | {len(instance.jobs)} | {instance.iterations} | {optimum} | "
            + " | ".join(cells)
            + " |"
        )
        if moved := _unlearned(instance, counts):
            unlearned.append(f"{instance.name}: {', '.join(moved)}")
    lines += [
        "",
        "Each policy runs as registered, so SlidingServe's configurations learn their",
        "predictor and latency margin online (their default). Here the predictor is exact from",
        "the start, so learning has nothing to correct, and on ten iterations it costs requests:",
        "with `learn=false` they serve",
        f"({'; '.join(unlearned) or 'no change'}).",
        "",
        "Instances are in `proofs/instances.py`. A policy's run, cut down to the requests it",
        "served on time, is checked to be a feasible point of the MILP (so the bound is a",
        "bound for it), and the MILP's schedule is replayed to check that it is a real one.",
        "The trace bound ([bound.md](bound.md)) needs no K and no solver: it is never below",
        "the MILP's optimum.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    """Write proofs/README.md."""
    (HERE / "README.md").write_text(render())


if __name__ == "__main__":
    main()
